"""baremetal-operator's host features that ride on the agent path, through the baremetalhost module against real
Ironic, the emulated BMC and the agent: the provisioning retry limit, the reboot.metal3.io modes (what reaches the
BMC: GracefulShutdown or ForceOff, and a refused graceful shutdown), the detached annotation (the node leaves
Ironic, the machine keeps running its image, re-attaching adopts it, deleting a detached host touches nothing).

Lab hosts index 2 and 3 (host-03, host-04) only: the other agent files use 0, 1, 8-11. Annotations are set on the
stored BareMetalHost directly, as ``kubectl annotate`` would.
"""

from __future__ import annotations

import time

import pytest

from lab.ironic import faults

pytestmark = pytest.mark.timeout(1800)

DETACH, REBOOT = 2, 3
DETACHED = "baremetalhost.metal3.io/detached"
REBOOT_ANNOTATION = "reboot.metal3.io"


def annotate(al, name: str, **annotations) -> None:
    """Set (a value) or remove (None) annotations of the stored host."""
    host = al.bmh(name)
    ann = host["metadata"].setdefault("annotations", {})
    for key, value in annotations.items():
        key = {"detached": DETACHED, "reboot": REBOOT_ANNOTATION}[key]
        if value is None:
            ann.pop(key, None)
        else:
            ann[key] = value
    al.store.update(host)


def resets(al, i: int) -> list[tuple[str, int]]:
    """(ResetType, HTTP status) of every ComputerSystem.Reset host i's BMC received."""
    return [(e["reset_type"], e["status"]) for e in faults.resets(al.cfg, al.host(i)["uuid"])]


def image_failures(al, name: str, image: dict) -> list[str]:
    """The errors Ironic's node history holds about this image (API 1.78): one per deploy attempt with it."""
    node = al.node(name)
    resp = al.conn.baremetal.get(f"/nodes/{node.id}/history", microversion="1.78")
    resp.raise_for_status()
    return [e["event"] for e in resp.json()["history"] if e.get("severity") == "ERROR" and image["url"] in e["event"]]


def host_task(al, i: int, **args) -> dict:
    return {"baremetal.capi.baremetalhost": {"name": al.host(i)["name"], "wait": True, **args}}


def reboot(al, i: int, value: str, *, expect_failure: bool = False) -> list[tuple[str, int]]:
    """Annotate host i for a reboot and run the module until the host is back on; the resets its BMC got."""
    before = len(resets(al, i))
    annotate(al, al.host(i)["name"], reboot=value)
    (res,) = al.play([host_task(al, i)], expect_failure=expect_failure)
    assert bool(res.get("failed")) is expect_failure, res
    return resets(al, i)[before:]


def test_retry_limit_reboot_modes_and_detach_on_agent_hosts(agentlab):
    al = agentlab
    t0 = time.monotonic()
    al.wait_free([DETACH, REBOOT])
    names = {i: al.host(i)["name"] for i in (DETACH, REBOOT)}
    entries = [al.agent_entry(DETACH), al.agent_entry(REBOOT)]
    (reg,) = al.play([{"baremetal.capi.baremetalhost": {"hosts": entries, "wait": True, "workers": 2}}])
    assert [h["state"] for h in reg["hosts"]] == ["available"] * 2, reg["hosts"]
    good = al.inv["images"]["agent_image"]

    # -- the provisioning retry limit (1 here): an image that is not there fails its deploy (Ironic's HEAD of the
    # image URL, as the deploy starts); the host is deprovisioned (cleaned) and not deployed with it again
    bad = dict(good, url=good["url"] + ".missing")
    limited = host_task(al, REBOOT, spec={"online": True, "image": bad}, max_provisioning_retries=1)
    (first,) = al.play([limited], expect_failure=True)
    assert first["failed"] is True
    status = al.bmh(names[REBOOT])["status"]
    assert status["errorType"] == "provisioning error" and status["provisioningFailCount"] == 1, status
    assert status["errorMessage"].startswith(f"Image provisioning failed (url: {bad['url']}, "), status
    assert "404" in status["errorMessage"], status
    attempt = image_failures(al, names[REBOOT], bad)
    assert attempt, "Ironic's history has no failure of the missing image"
    # the next run deprovisions it, then stops at the limit: BMO's provisioning error naming the limit
    (second,) = al.play([limited], expect_failure=True)
    assert second["failed"] is True
    status = al.bmh(names[REBOOT])["status"]
    assert status["provisioning"]["state"] == "available" and status["provisioningFailCount"] == 1, status
    assert status["errorMessage"].startswith("provisioning failed 1 times (the limit is 1) with image "), status
    # and stays there: a further run (the error is the host's already, so it waits out its timeout) tries nothing
    stalled = host_task(al, REBOOT, spec={"online": True, "image": bad}, max_provisioning_retries=1, wait_timeout=15)
    (third,) = al.play([stalled], expect_failure=True)
    assert third["failed"] is True
    status = al.bmh(names[REBOOT])["status"]
    assert status["provisioning"]["state"] == "available" and status["provisioningFailCount"] == 1, status
    assert al.node(names[REBOOT]).provision_state == "available"
    assert image_failures(al, names[REBOOT], bad) == attempt  # one attempt in all
    t_retry = time.monotonic()

    # the corrected image resets the count and provisions; the detach host is provisioned alongside
    provision = [{"name": names[i], "spec": {"online": True, "image": dict(good)}} for i in (DETACH, REBOOT)]
    task = {"hosts": provision, "wait": True, "workers": 2, "max_provisioning_retries": 1}
    (prov,) = al.play([{"baremetal.capi.baremetalhost": task}])
    assert [h["state"] for h in prov["hosts"]] == ["provisioned"] * 2, prov["hosts"]
    status = al.bmh(names[REBOOT])["status"]
    assert "provisioningFailCount" not in status and not status.get("errorType"), status
    t_prov = time.monotonic()

    # -- reboot modes: what the BMC receives
    soft = reboot(al, REBOOT, "")
    assert [r for r in soft if r[0] != "On"] == [("GracefulShutdown", 204)], soft
    assert soft[-1] == ("On", 204), soft
    hard = reboot(al, REBOOT, '{"mode": "hard"}')
    assert [r for r in hard if r[0] != "On"] == [("ForceOff", 204)], hard
    bmh = al.bmh(names[REBOOT])
    assert REBOOT_ANNOTATION not in bmh["metadata"].get("annotations", {}) and bmh["status"]["poweredOn"] is True

    # a BMC that refuses a graceful shutdown (no ACPI): Ironic's soft power off fails, BMO's power management error
    # says the hard power-off comes next, and the next run does it
    faults.set_fault(al.cfg, al.host(REBOOT)["uuid"], refuse_graceful=True)
    refused = reboot(al, REBOOT, '{"mode": "soft"}', expect_failure=True)
    assert refused == [("GracefulShutdown", 400)], refused
    status = al.bmh(names[REBOOT])["status"]
    assert status["errorType"] == "power management error", status
    prefix = "Continuing with hard poweroff after soft poweroff fails. More details: "
    assert status["errorMessage"].startswith(prefix) and "GracefulShutdown refused" in status["errorMessage"], status
    assert al.system_power(REBOOT) == "On"
    before = len(resets(al, REBOOT))
    (retry,) = al.play([host_task(al, REBOOT)])
    forced = resets(al, REBOOT)[before:]
    assert [r for r in forced if r[0] != "On"] == [("ForceOff", 204)], forced
    status = al.bmh(names[REBOOT])["status"]
    assert not status.get("errorType") and status["poweredOn"] is True, status
    faults.clear(al.cfg, al.host(REBOOT)["uuid"])
    t_reboot = time.monotonic()

    # -- detached: the node leaves Ironic, the machine keeps running its image
    name = names[DETACH]
    node_id = al.node(name).id
    before = len(resets(al, DETACH))
    annotate(al, name, detached="")
    (det,) = al.play([host_task(al, DETACH)])
    status = al.bmh(name)["status"]
    assert status["operationalStatus"] == "detached" and status["provisioning"]["state"] == "provisioned", status
    assert al.node(name) is None
    assert al.system_power(DETACH) == "On" and resets(al, DETACH)[before:] == []
    assert al.image_on_disk(DETACH, good)
    # while detached nothing is asked of Ironic, whatever the spec says
    (idle,) = al.play([host_task(al, DETACH, spec={"online": False})])
    assert al.node(name) is None and al.system_power(DETACH) == "On" and resets(al, DETACH)[before:] == []

    # re-attached: a fresh node, adopted (not deployed again), the host as it was
    annotate(al, name, detached=None)
    (back,) = al.play([host_task(al, DETACH, spec={"online": True})])
    status = al.bmh(name)["status"]
    assert status["operationalStatus"] == "OK" and status["provisioning"]["state"] == "provisioned", status
    node = al.node(name)
    assert node is not None and node.id != node_id and status["provisioning"]["ID"] == node.id
    assert node.provision_state == "active" and node.instance_info["image_source"] == good["url"]
    assert node.power_state == "power on" and resets(al, DETACH)[before:] == []
    assert al.image_on_disk(DETACH, good)

    # deleting a detached host: no power-off, no deprovisioning
    annotate(al, name, detached="")
    al.play([host_task(al, DETACH)])
    assert al.node(name) is None
    (gone,) = al.play([{"baremetal.capi.baremetalhost": {"name": name, "state": "absent", "wait": True}}])
    assert _deleted(al, name) and gone["changed"] is True
    assert al.system_power(DETACH) == "On" and resets(al, DETACH)[before:] == []
    assert al.image_on_disk(DETACH, good)
    t_detach = time.monotonic()
    print(
        f"timings: register+retry limit {t_retry - t0:.0f}s, provision {t_prov - t_retry:.0f}s, "
        f"reboots {t_reboot - t_prov:.0f}s, detach {t_detach - t_reboot:.0f}s"
    )
    # the detached host was left running: switch it off for the next user of the lab host
    faults_off(al, DETACH)


def _deleted(al, name: str) -> bool:
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound

    try:
        al.store.get("BareMetalHost", name, al.ns)
    except NotFound:
        return True
    return False


def faults_off(al, i: int) -> None:
    """ForceOff straight to the emulated BMC (past the proxy), as someone at the rack would."""
    import base64
    import json
    import urllib.request

    from lab.ironic import hosts as lab_hosts

    token = base64.b64encode(f"{lab_hosts.BMC_USERNAME}:{lab_hosts.BMC_PASSWORD}".encode()).decode()
    req = urllib.request.Request(
        al.host(i)["system_url"] + "/Actions/ComputerSystem.Reset",
        data=json.dumps({"ResetType": "ForceOff"}).encode(),
        method="POST",
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10):
        pass
