"""BareMetalHosts for the ironic driver's unit tests, in a sqlite store, with their node in the fake Ironic."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

IMAGE = {"url": "http://images.invalid/img.raw", "checksum": "1" * 64, "checksumType": "sha256", "format": "raw"}
MAC = "52:54:00:00:00:01"
ADDRESS = "redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/s1"
KEY = ("ns", "h")


def store(tmp_path) -> SqliteStore:
    s = SqliteStore(str(tmp_path / "s.db"))
    s.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "bmc-h", "namespace": "ns"},
            "stringData": {"username": "admin", "password": "secret"},
        }
    )
    return s


def provisioned(st, bm, *, annotations: dict | None = None, online: bool = True, power: str = "power on"):
    """A provisioned host and its active node; returns the node."""
    st.create(
        {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "BareMetalHost",
            "metadata": {
                "name": "h",
                "namespace": "ns",
                "annotations": dict(annotations or {}),
                "finalizers": [S.BMH_FINALIZER],
            },
            "spec": {
                "online": online,
                "bmc": {"address": ADDRESS, "credentialsName": "bmc-h"},
                "bootMACAddress": MAC,
                "image": dict(IMAGE),
            },
        }
    )
    node = bm.add_node(
        name="ns~h",
        provision_state="active",
        power_state=power,
        driver_info={"redfish_address": "http://127.0.0.1:8000", "redfish_system_id": "/redfish/v1/Systems/s1"},
        instance_info={"image_source": IMAGE["url"]},
    )
    bm.create_port(node.id, MAC)
    host = st.get("BareMetalHost", "h", "ns")
    host["status"] = {
        "provisioning": {
            "state": S.BMH_STATE_PROVISIONED,
            "ID": node.id,
            "image": dict(IMAGE),
            "bootMode": "UEFI",
            "rootDeviceHints": {"deviceName": "/dev/sda"},
        },
        "poweredOn": power == "power on",
        "operationalStatus": S.BMH_OPERATIONAL_OK,
        "errorMessage": "",
    }
    st.update_status(host)
    bm.calls.clear()
    return node


def settle(drv, st, steps: int = 20):
    """Reconcile until a step says done; the steps taken."""
    out = []
    for _ in range(steps):
        step = drv.reconcile(st, KEY)
        out.append(step)
        if step.done:
            return out
    raise AssertionError(f"not done after {steps} steps: {[s.message for s in out]}")


def bmh(st) -> dict:
    return st.get("BareMetalHost", "h", "ns")


def annotate(st, annotations: dict) -> None:
    """Set (a value) or remove (None) annotations, as kubectl annotate does."""
    host = bmh(st)
    ann = host["metadata"].setdefault("annotations", {})
    for k, v in annotations.items():
        if v is None:
            ann.pop(k, None)
        else:
            ann[k] = v
    st.update(host)
