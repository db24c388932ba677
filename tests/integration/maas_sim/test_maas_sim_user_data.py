"""user_data as MAAS 3.5 takes it, and requests that fail leaving nothing changed (one transaction each)."""

from __future__ import annotations

import base64
import binascii

import pytest

CLOUD_CONFIG = b"#cloud-config\nruncmd:\n  - [kubeadm, join]\n"


def _deploy(sim, system_id, **fields):
    return sim.call("POST", f"machines/{system_id}/", params={"op": "deploy"}, data=fields)


def test_user_data_is_base64_decoded_once_and_stored_as_bytes(sim, tag):
    m = sim.seed({}, tag=tag)[0]
    raw = bytes(range(256))  # not text: MAAS stores bytes
    resp = _deploy(sim, m["system_id"], user_data=base64.b64encode(raw).decode())
    assert resp.status_code == 200, resp.text
    assert base64.b64decode(sim.state(m["system_id"])["user_data_b64"]) == raw


@pytest.mark.parametrize("sent", ["#cloud-config\nkey: value1\n", "not base64 at all!", "YWJj\nZGVm\n"])
def test_text_that_is_not_base64_is_decoded_the_lenient_way_maas_decodes_it(sim, tag, sent):
    """b64decode drops characters outside the alphabet: a client that forgets to encode gets garbage, not an error."""
    m = sim.seed({}, tag=tag)[0]
    try:
        expected = base64.b64decode(sent)
    except binascii.Error as exc:
        expected = exc
    resp = _deploy(sim, m["system_id"], user_data=sent)
    state = sim.state(m["system_id"])
    if isinstance(expected, Exception):
        # an unhandled error in MAAS: 500 with the exception's text, and the transaction rolled back
        assert (resp.status_code, resp.text) == (500, str(expected))
        assert (state["status_name"], state["owner"], state["user_data_b64"]) == ("Ready", None, None)
    else:
        assert resp.status_code == 200, resp.text
        assert base64.b64decode(state["user_data_b64"]) == expected
        assert expected != sent.encode()


def test_failed_deploy_leaves_a_ready_machine_ready(sim, tag):
    m = sim.seed({}, tag=tag)[0]
    sid = m["system_id"]
    before = sim.state(sid)
    # deploy acquires a Ready machine first; the request then fails: nothing of it stays
    for fields, status in (
        ({"user_data": "abcde", "distro_series": "jammy"}, 500),
        ({"ephemeral_deploy": "true", "install_kvm": "true"}, 400),
        ({"ephemeral_deploy": "true", "register_vmhost": "true"}, 400),
        ({"ephemeral_deploy": "maybe"}, 400),
    ):
        resp = _deploy(sim, sid, agent_name="capi-x", **fields)
        assert resp.status_code == status, (fields, resp.text)
        after = sim.state(sid)
        for key in ("status_name", "owner", "osystem", "distro_series", "user_data_b64", "power_state",
                    "ephemeral_deploy"):  # fmt: skip
            assert after[key] == before[key], (fields, key)
        assert len(after["history"]) == len(before["history"])
    bad = _deploy(sim, sid, ephemeral_deploy="true", install_kvm="true")
    assert bad.text == "A machine can not be a VM host if it is deployed to memory."
    # and an allocated one stays Allocated, owned, with its agent name
    assert sim.call("POST", "machines/", params={"op": "allocate"}, data={"system_id": sid}).status_code == 200
    resp = _deploy(sim, sid, user_data="abcde")
    assert resp.status_code == 500
    state = sim.state(sid)
    assert (state["status_name"], state["owner"], state["power_state"]) == ("Allocated", "admin", "off")


def test_python_libmaas_bytes_and_str_user_data(client, sim, tag):
    a, b = sim.seed({}, {}, tag=tag)
    machine = client.machines.get(a["system_id"])
    machine.deploy(user_data=CLOUD_CONFIG, distro_series="jammy")  # bytes: python-libmaas encodes them
    assert sim.state(a["system_id"])["user_data"] == CLOUD_CONFIG.decode()
    machine = client.machines.get(b["system_id"])
    machine.deploy(user_data=base64.b64encode(CLOUD_CONFIG).decode())  # str: taken as base64 already
    assert sim.state(b["system_id"])["user_data"] == CLOUD_CONFIG.decode()
