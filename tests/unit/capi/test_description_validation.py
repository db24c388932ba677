"""Every kind of bad description fails in validation, naming the object and the field, with nothing written.

The engine (capi/validate.py) runs on a real sqlite store in a temp dir; ``python
tests/unit/capi/test_description_validation.py`` regenerates docs/reliability.md from the same table (the
test checks the page lists every case with the message it gives now).
"""

from __future__ import annotations

import copy
import pathlib
import sqlite3
import sys
import time

import pytest
import yaml

if __name__ == "__main__":  # run as a script: the collection on sys.path as tests/conftest.py puts it
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "build"))

from ansible_collections.baremetal.capi.plugins.module_utils.capi import description, validate
from ansible_collections.baremetal.capi.plugins.module_utils.capi import description_objects as cd
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bad_descriptions as bd  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reliability.md"


def count_objects(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM objects").fetchone()[0]


def run(desc, path) -> tuple[str | None, list]:
    """(error message or None, plan) of the validation as the playbook's first task does it."""
    store = open_store({"kind": "sqlite", "path": str(path)})
    try:
        objects = cd.objects(desc, "all")
        return None, validate.validate(desc, objects, store)
    except (Invalid, cd.DescriptionError) as exc:
        return str(exc), []
    finally:
        store.close()


def run_stored(case, path) -> tuple[str | None, int, int]:
    """A STORED_CASES case: its objects stored first; (message, objects before, objects after)."""
    _kind, _base, _mutate, _obj, _field, stored, _names = case
    store = open_store({"kind": "sqlite", "path": str(path)})
    for obj in stored:
        store.create(copy.deepcopy(obj))
    store.close()
    before = count_objects(path)
    msg, _plan = run(bd.bad(case[:5]), path)
    return msg, before, count_objects(path)


def test_the_table_has_45_kinds_or_more():
    kinds = [c[0] for c in bd.CASES + bd.STORED_CASES]
    assert len(kinds) == len(set(kinds)) >= 45


@pytest.mark.parametrize("base", [bd.metal3, bd.maas])
def test_the_good_descriptions_pass_with_a_plan(tmp_path, base):
    msg, plan = run(base(), tmp_path / "s.db")
    assert msg is None
    kinds = {p["kind"] for p in plan}
    assert {"Namespace", "Cluster", "KubeadmControlPlane", "MachineDeployment", "KubeadmConfigTemplate"} <= kinds
    if base is bd.metal3:
        assert {"Metal3Cluster", "IPPool", "Metal3DataTemplate", "BareMetalHost", "Metal3MachineTemplate"} <= kinds
    assert {p["action"] for p in plan} == {"create"}
    assert count_objects(tmp_path / "s.db") == 0


@pytest.mark.parametrize("case", bd.CASES, ids=[c[0] for c in bd.CASES])
def test_bad_input_names_object_and_field_before_any_write(tmp_path, case):
    kind, _base, _mutate, obj, field = case
    msg, _plan = run(bd.bad(case), tmp_path / "s.db")
    assert msg is not None, f"{kind}: accepted"
    assert obj in msg and field in msg, f"{kind}: {msg!r} should name {obj!r} and {field!r}"
    assert "Traceback" not in msg and "Unknown error" not in msg
    assert count_objects(tmp_path / "s.db") == 0


@pytest.mark.parametrize("case", bd.STORED_CASES, ids=[c[0] for c in bd.STORED_CASES])
def test_bad_input_against_the_store_names_both_objects_before_any_write(tmp_path, case):
    kind, _base, _mutate, obj, field, stored, other = case
    msg, before, after = run_stored(case, tmp_path / "s.db")
    assert msg is not None, f"{kind}: accepted"
    assert obj in msg and field in msg and other in msg, f"{kind}: {msg!r} should name {obj!r}, {field!r}, {other!r}"
    assert before >= len(stored) and after == before


@pytest.mark.parametrize("case", bd.STORED_CASES, ids=[c[0] for c in bd.STORED_CASES])
def test_the_same_store_rules_pass_on_a_store_that_does_not_collide(tmp_path, case):
    """The description of each stored case passes on an empty store: the stored objects are what it refuses."""
    msg, _plan = run(bd.bad(case[:5]), tmp_path / "s.db")
    assert msg is None, msg


def test_a_rerun_against_its_own_stored_objects_passes(tmp_path):
    """The description's own hosts, pools, addresses and control plane in the store are not collisions."""
    store = open_store({"kind": "sqlite", "path": str(tmp_path / "s.db")})
    desc = bd.metal3()
    for host in desc["hosts"]:
        store.create(bd._host(host["name"], "valid", host["spec"]["bootMACAddress"], host["spec"]["bmc"]["address"]))
    store.create(bd._ippool("v1-prov", "valid", "v1", "10.5.0.10", "10.5.0.20"))
    spec = {"address": "10.5.0.10", "prefix": 24, "pool": {"name": "v1-prov"}, "claim": {"name": "c"}}
    store.create({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
                  "metadata": {"name": "v1-prov-10-5-0-10", "namespace": "valid"}, "spec": spec})  # fmt: skip
    store.create(bd._kcp("v1.33.9"))
    store.create(bd._md("v1.31.0"))  # three minors behind v1.34: what the kubelet skew allows
    store.close()
    msg, _plan = run(desc, tmp_path / "s.db")
    assert msg is None, msg


def test_workers_behind_the_skew_are_brought_up_when_the_control_plane_stays(tmp_path):
    """The kubelet skew refuses an upgrade that would widen it, not the run that brings the workers to the
    control plane's version (stored KCP at the description's version, a MachineDeployment four minors behind)."""
    store = open_store({"kind": "sqlite", "path": str(tmp_path / "s.db")})
    store.create(bd._kcp("v1.34.4"))
    store.create(bd._md("v1.30.0"))
    store.close()
    msg, _plan = run(bd.metal3(), tmp_path / "s.db")
    assert msg is None, msg
    desc = bd.metal3()
    desc["kubernetes_version"] = "v1.35.0"
    msg, _plan = run(desc, tmp_path / "s.db")
    assert "5 minor versions ahead of MachineDeployment valid/v1-md-0" in msg, msg


def test_seven_clusters_with_one_range_get_one_pool_between_them(tmp_path):
    """The issue's seven clusters in one store, each with a valid description whose pool is 127.30.60.100-120, run
    one after the other (in seven namespaces, or in one): the first is accepted and its pool stored, as the data
    role writes it; every later one is refused naming its own pool and the stored one, and writes nothing."""
    path = tmp_path / "s.db"
    store = open_store({"kind": "sqlite", "path": str(path)})
    accepted, refused = [], []
    for i in range(7):
        desc = bd.metal3()
        desc["name"], desc["namespace"] = f"c{i}", (f"team-{i}" if i % 2 else "shared")
        desc["control_plane_endpoint"]["host"] = f"127.30.61.{i + 1}"
        desc["ip_pools"][0]["name"] = f"c{i}-prov"
        desc["ip_pools"][0]["spec"] = {"namePrefix": f"c{i}-prov", "prefix": 24, "gateway": "127.30.60.1",
                                       "pools": [{"start": "127.30.60.100", "end": "127.30.60.120"}]}  # fmt: skip
        desc["data_template"]["spec"]["networkData"]["networks"]["ipv4"][0]["ipAddressFromIPPool"] = f"c{i}-prov"
        for j, host in enumerate(desc["hosts"]):
            host["name"] = f"c{i}-host-{j}"
            host["spec"]["bootMACAddress"] = f"52:54:00:30:{i:02x}:{j:02x}"
            host["spec"]["bmc"]["address"] = (
                f"fake://c{i}-host-{j}" if j == 0 else f"{host['spec']['bmc']['address']}{i}"
            )
        before = count_objects(path)
        try:
            validate.validate(desc, cd.objects(desc, "all"), store)
        except Invalid as exc:
            refused.append(str(exc))
            assert count_objects(path) == before
            continue
        accepted.append(desc["name"])
        pool = bd._ippool(f"c{i}-prov", desc["namespace"], desc["name"], "127.30.60.100", "127.30.60.120")
        store.create(pool)
    store.close()
    assert accepted == ["c0"] and len(refused) == 6
    for i, msg in enumerate(refused, start=1):
        ns = f"team-{i}" if i % 2 else "shared"
        assert msg.startswith(f"IPPool {ns}/c{i}-prov (capi_cluster.ip_pools[0]): spec.pools[0]: "), msg
        assert "of IPPool shared/c0-prov (stored, cluster c0)" in msg, msg


def test_host_interfaces_known_from_the_store_count_too(tmp_path):
    """Hosts without hardware in the description: the interfaces are checked against the stored hosts'
    inspection (status.hardware.nics) when every host has one, and not at all when one host is unknown."""
    desc = bd.metal3()
    desc["data_template"]["spec"]["networkData"]["links"]["ethernets"][0]["macAddress"]["fromHostInterface"] = "eno9"
    msg, _plan = run(desc, tmp_path / "empty.db")
    assert msg is None, msg  # nothing known about the hosts' NICs: Ironic's inspection will tell
    path = tmp_path / "s.db"
    store = open_store({"kind": "sqlite", "path": str(path)})
    for i, host in enumerate(desc["hosts"]):
        obj = bd._host(host["name"], "valid", host["spec"]["bootMACAddress"], host["spec"]["bmc"]["address"])
        stored = store.create(obj)
        if i == 0:
            stored["status"] = {"hardware": {"nics": [{"name": "enp1s0", "mac": "52:54:00:aa:00:00"}]}}
            store.update_status(stored)
    store.close()
    msg, _plan = run(desc, path)
    assert msg is None, msg  # hosts[1] is not inspected yet
    store = open_store({"kind": "sqlite", "path": str(path)})
    store.create({"apiVersion": "metal3.io/v1alpha1", "kind": "HardwareData",
                  "metadata": {"name": "v1-host-1", "namespace": "valid"},
                  "spec": {"hardware": {"nics": [{"name": "enp1s0", "mac": "52:54:00:aa:00:01"}]}}})  # fmt: skip
    store.close()
    before = count_objects(path)
    msg, _plan = run(desc, path)
    assert msg.startswith("Metal3DataTemplate valid/v1-nodes (capi_cluster.data_template): spec.networkData.links"
                          ".ethernets[0].macAddress.fromHostInterface: no host of the description has an interface "
                          "'eno9'"), msg  # fmt: skip
    assert count_objects(path) == before


def test_type_errors_are_in_the_users_words():
    """Ansible hands the module tagged values (_AnsibleTaggedFloat, ...): the message says float, not the class."""
    from ansible._internal._datatag._tags import Origin

    tag = Origin(path="/inventory/host_vars/c1.yml", line_num=7).tag
    for value, words in ((3.5, "got a float (3.5)"), ("3", "got a string"), ([3], "got a list"),
                         ({"n": 3}, "got a mapping"), (True, "got a boolean"), (None, None)):  # fmt: skip
        desc = bd.metal3()
        desc["workers"][0]["replicas"] = tag(value) if value is not None else None
        msg = None
        try:
            description.check(desc)
        except Invalid as exc:
            msg = str(exc)
        if words is None:
            assert msg is None  # null: the default replicas
            continue
        assert msg.startswith("capi_cluster: workers[0].replicas: must be an integer, ") and words in msg, msg
        assert "Ansible" not in msg and "Tagged" not in msg
    for whole, words in ((None, "got null"), ([{"name": "v1"}], "got a list"), (tag("v1"), "got a string")):
        with pytest.raises(Invalid, match=f"^capi_cluster: must be a mapping, {words}$"):
            description.check(whole)


def test_a_manifest_that_is_not_yaml_is_never_quoted(tmp_path):
    """The error names the file, line and column; no line of the file (a password) reaches the message."""
    secret = "hunter2-do-not-print"
    for i, text in enumerate((
        f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "{secret}\n',
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: db\nstringData: {{password: {secret}}}\n",
        f"apiVersion: v1\nkind: Secret\nstringData:\n  password: !{secret} x\n",
        f"apiVersion: v1\nkind: Secret\nstringData:\n\tpassword: {secret}\n",
        f"apiVersion: v1\nkind: Secret\nstringData:\n  password: '{secret}\n",
    )):  # fmt: skip
        path = tmp_path / f"m{i}.yaml"
        path.write_text(text)
        desc = bd.metal3()
        desc["addons"] = [{"name": "db", "manifests": [str(path)]}]
        msg, _plan = run(desc, tmp_path / f"s{i}.db")
        assert msg.startswith(f"capi_cluster.addons[0]: manifests[0]: {path}: not YAML: line "), msg
        assert "column" in msg and secret not in msg and "password" not in msg, msg
        assert count_objects(tmp_path / f"s{i}.db") == 0


@pytest.mark.parametrize("base", [bd.metal3, bd.maas])
def test_the_objects_of_a_good_description_have_known_spec_fields(base):
    """What the description filter makes passes the object module's spec-field check (spec_fields.py)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.model import spec_fields

    objects = cd.objects(base(), "all")
    assert {o["kind"] for o in objects} & set(spec_fields.SPEC_FIELDS)
    for obj in objects:
        spec_fields.check(obj)


def test_the_stored_objects_are_the_old_ones(tmp_path):
    """A changed networkData against the stored template is refused (CAPM3's immutability), before any write."""
    store = open_store({"kind": "sqlite", "path": str(tmp_path / "s.db")})
    desc = bd.metal3()
    stored = validate.meta.new("Metal3DataTemplate", "v1-nodes", "valid", spec=desc["data_template"]["spec"])
    store.create(validate.webhooks.admit(stored))
    before = count_objects(tmp_path / "s.db")
    desc["data_template"]["spec"]["networkData"]["links"]["ethernets"][0]["id"] = "enp2s0"
    desc["data_template"]["spec"]["networkData"]["networks"]["ipv4"][0]["link"] = "enp2s0"
    with pytest.raises(Invalid, match=r"Metal3DataTemplate valid/v1-nodes.*spec.networkData: networkData is immutable"):
        validate.validate(desc, cd.objects(desc, "all"), store)
    plan = validate.validate(bd.metal3(), cd.objects(bd.metal3(), "all"), store)
    assert {p["name"]: p["action"] for p in plan}["v1-nodes"] == "unchanged"
    store.close()
    assert count_objects(tmp_path / "s.db") == before


def test_a_stored_credentials_secret_is_enough(tmp_path):
    store = open_store({"kind": "sqlite", "path": str(tmp_path / "s.db")})
    desc = bd.metal3()
    host = desc["hosts"][1]
    host.pop("bmc_username"), host.pop("bmc_password")
    host["spec"]["bmc"]["credentialsName"] = "v1-host-1-bmc"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "v1-host-1-bmc", "namespace": "valid"},
              "stringData": {"username": "admin"}}  # fmt: skip
    store.create(secret)
    with pytest.raises(Invalid, match="v1-host-1-bmc has no password"):
        validate.validate(desc, cd.objects(desc, "all"), store)
    stored = store.get("Secret", "v1-host-1-bmc", "valid")
    stored["stringData"] = {"username": "admin", "password": "pw"}
    store.update(stored)
    assert validate.validate(desc, cd.objects(desc, "all"), store)
    store.close()


def test_the_scaled_description_is_checked_too():
    with pytest.raises(cd.DescriptionError, match="capi_worker_replicas: no worker pool named md-9"):
        cd.scaled(bd.metal3(), None, {"md-9": 1})
    with pytest.raises(Invalid, match=r"capi_cluster: control_plane.replicas: must be odd"):
        scaled = cd.scaled(bd.metal3(), 2, None)
        validate.validate(scaled, [], None)


def test_the_add_ons_are_read_and_admitted_with_the_rest(tmp_path):
    """Manifest paths relative to the base directory; the ConfigMap and ClusterResourceSet in the plan."""
    desc = bd.metal3()
    desc["addons"] = [{"name": "cni", "manifests": ["cni.yaml"]}, {"name": "rec", "manifests": ["cni.yaml"],
                                                                    "strategy": "Reconcile"}]  # fmt: skip
    with pytest.raises(Invalid, match=r"capi_cluster.addons\[0\]: manifests\[0\]: .*cni.yaml: No such file"):
        validate.validate(desc, cd.objects(desc, "all"), None, str(tmp_path))
    plan = validate.validate(desc, cd.objects(desc, "all"), None, str(bd.ADDONS))
    added = {(p["kind"], p["name"]) for p in plan if p["kind"] in ("ConfigMap", "ClusterResourceSet")}
    assert added == {("ConfigMap", "v1-addon-cni"), ("ClusterResourceSet", "v1-cni"),
                     ("ConfigMap", "v1-addon-rec"), ("ClusterResourceSet", "v1-rec")}  # fmt: skip


def test_an_add_on_beyond_a_configmap_is_refused(tmp_path):
    """The API server refuses a ConfigMap over 1 MiB (data keys and values): refused here, before any write."""
    big = tmp_path / "big.yaml"
    big.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  blob: " + "x" * (1 << 20) + "\n")
    desc = bd.metal3()
    desc["addons"] = [{"name": "big", "manifests": [str(big)]}]
    msg, _plan = run(desc, tmp_path / "s.db")
    assert msg.startswith("capi_cluster.addons[0]: manifests: the manifests make ConfigMap v1-addon-big of "), msg
    assert "at most 1048576" in msg and count_objects(tmp_path / "s.db") == 0


def test_the_secrets_of_a_description_are_known_for_no_log():
    assert validate.secrets(bd.metal3()) == ["s3cret-bmc"]
    assert validate.secrets("x") == []


def _spec_tree(options: dict) -> dict:
    out = {}
    for key, opt in options.items():
        sub = opt.get("options")
        if sub and opt["type"] == "list":
            out[key] = ("list", _spec_tree(sub))
        elif sub:
            out[key] = _spec_tree(sub)
        elif opt["type"] == "list":
            out[key] = ("list", opt.get("elements", "raw"))
        else:
            out[key] = opt["type"]
    return out


def test_the_schema_is_the_documented_one():
    """description.SCHEMA and docs/cluster-description-spec.yml (the roles' argument specs) say the same."""
    spec = yaml.safe_load((ROOT / "docs" / "cluster-description-spec.yml").read_text())["capi_cluster"]["options"]
    assert description.SCHEMA == _spec_tree(spec)


def test_the_filter_names_a_field_instead_of_crashing():
    for case in bd.CASES:
        try:
            cd.objects(bd.bad(case), "all")
        except cd.DescriptionError:
            pass  # an error naming the field: the cases above check which


# -- docs/reliability.md -------------------------------------------------------------------------------

HEADER = """# Reliability: bad input

Generated by `python tests/unit/capi/test_description_validation.py` from the table in
`tests/unit/capi/bad_descriptions.py`; `tests/unit/capi/test_description_validation.py` checks that every
kind is here with the message it gives. Each bad description goes through what the first task of
`provision_cluster.yml` and `scale_cluster.yml` (`baremetal.capi.cluster_validate`) does: the description's
own rules, then every object it makes admitted through the webhooks together, then the rules across objects
and against what the store holds (other clusters' hosts and pools, the stored control plane's version), on a
fresh sqlite store (with the objects a kind says it stored first). *Seconds* is the time that validation took on
the machine that generated the page; *written* is the number of objects it added to the store.
`tests/integration/e2e/test_validation_playbook.py` runs `provision_cluster.yml` itself on some of these and
checks that the failure is its first task, with nothing in the store.

| kind of bad input | message | seconds | written |
|---|---|---|---|
"""


def rows(tmp: pathlib.Path) -> list[tuple[str, str, float, int]]:
    out = []
    for i, case in enumerate(bd.CASES):
        path = tmp / f"{i}.db"
        t0 = time.monotonic()
        msg, _ = run(bd.bad(case), path)
        msg = (msg or "ACCEPTED").replace(str(bd.ADDONS), "tests/unit/capi/addon_manifests")  # any clone's page
        out.append((case[0], msg, time.monotonic() - t0, count_objects(path)))
    for i, case in enumerate(bd.STORED_CASES):
        path = tmp / f"stored-{i}.db"
        t0 = time.monotonic()
        msg, before, after = run_stored(case, path)
        out.append((f"{case[0]} (stored first: {before})", msg or "ACCEPTED", time.monotonic() - t0, after - before))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def test_the_reliability_page_lists_every_kind_with_its_message(tmp_path):
    page = PAGE.read_text()
    for kind, msg, _seconds, written in rows(tmp_path):
        assert f"| {_cell(kind)} | {_cell(msg)} |" in page, f"docs/reliability.md is stale for {kind!r}: regenerate"
        assert written == 0


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        table = rows(pathlib.Path(tmp))
    lines = [f"| {_cell(k)} | {_cell(m)} | {s:.3f} | {w} |" for k, m, s, w in table]
    PAGE.write_text(HEADER + "\n".join(lines) + "\n")
    print(f"wrote {PAGE} ({len(lines)} kinds)")
