# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The host driver interface: who moves a BareMetalHost, and how callers wait on it.

A BareMetalHost (metal3.io/v1alpha1) says what a host should be (spec) and
reports what it is (status), as in baremetal-operator (BMO).  A *host driver*
is what turns spec into status:

``ironic``   (hosts/ironic/) the collection moves the host itself through
             Ironic, as BMO does (baremetal-operator pkg/provisioner/ironic/).
``external`` (hosts/external.py) something else moves it (a real BMO on the
             kubernetes store, or our ironic driver run as its own step);
             ``reconcile`` only reads status.

Get one with ``get_driver(name, options)``.  The contract every driver keeps:

``reconcile(store, bmh) -> runner.Step``
    One reconcile step of one host, BMO-style: at most a few Ironic calls, the
    result written with ``store.update_status`` (and ``store.update`` for the
    metadata BMO itself writes: its finalizer, the suffixless reboot
    annotation).  ``bmh`` is a BareMetalHost dict or ``(namespace, name)``;
    the driver re-reads it, so a stale copy is fine.  Safe to call from many
    threads at once (one Ironic connection per thread) and to repeat.

    The returned Step:

    * ``done``: the host has reached what its spec asks for (``goal``): the
      provisioning state (``provisioned`` when spec.image/customDeploy is set
      and spec.online, ``externally provisioned`` for adopted hosts, else
      ``available``), that image deployed, and ``status.poweredOn`` equal to the
      desired power (spec.online, forced off by ``reboot.metal3.io*``
      annotations).  A host being deleted is done when its object is gone.
    * ``requeue_after``: seconds until the next step is useful.
    * ``data["host"]``: ``summary(bmh)`` of the host after the step
      (state, poweredOn, errorType, errorMessage, errorCount, ...).
    * ``message``: what the step did, or the error BMO would report.

    Errors of the host (Ironic's last_error, a bad BMC secret...) are not
    raised: they go to status.errorType/errorMessage/errorCount as BMO writes
    them and the step requeues with BMO's backoff; ``failed(bmh)`` tells a
    waiting caller that the host is stuck in an error.  A paused host
    (``baremetalhost.metal3.io/paused``) is left alone (Step not done, data
    says paused).  Only programming and connection errors raise (CapiError).

``delete(store, bmh) -> runner.Step``
    One step of removing a host: marks the object deleted (its finalizer keeps
    it while the driver deprovisions, powers off and deletes the Ironic node),
    then reconciles.  ``done`` once the BareMetalHost is gone from the store.

``hardware(store, bmh) -> dict | None``
    status.hardware (BMO's HardwareDetails: nics[{name, mac, ip}], hostname,
    cpu, ramMebibytes, storage, systemVendor, firmware), taken from
    inspection or the host's HardwareData object; None when not known yet.

``close()``
    Close the driver's connections (every thread's).
"""

from __future__ import annotations

import json
import threading
from typing import Protocol

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

KIND = "BareMetalHost"
HARDWARE_DATA_KIND = "HardwareData"

# States in which BMO manages power (baremetal-operator baremetalhost_controller.go manageHostPower)
POWER_STATES = (
    names.BMH_STATE_AVAILABLE,
    names.BMH_STATE_READY,
    names.BMH_STATE_PROVISIONED,
    names.BMH_STATE_EXTERNALLY_PROVISIONED,
)


class HostDriver(Protocol):
    name: str
    # True when the driver does baremetal-operator's job itself (ironic); False when an operator does (external)
    operates_hosts: bool

    def reconcile(self, store, bmh) -> Step:
        """One reconcile step of the BareMetalHost ``bmh``, its status written to ``store``."""

    def delete(self, store, bmh) -> Step:
        """One step of deleting ``bmh`` (deprovisioning, then its provisioner's record)."""

    def hardware(self, store, bmh) -> dict | None:
        """The host's hardware details (what inspection found), or None when the host is gone."""

    def close(self) -> None:
        """Closes the driver's connections."""


# -- reading a BareMetalHost (shared by every driver and by callers) -----------


def read(store, bmh: dict) -> dict | None:
    """The BareMetalHost as stored now, or None once it is gone."""
    ns, name = key(bmh)
    try:
        return store.get(KIND, name, ns)
    except NotFound:
        return None


def start_delete(store, bmh) -> tuple[dict | None, bool]:
    """Delete the BareMetalHost unless it is deleting already: (the host as it stands now, None once it is gone;
    whether this call asked for the deletion). Both drivers then wait on its finalizers their own way."""
    host = read(store, bmh)
    if host is None or meta.is_deleting(host):
        return host, False
    ns, name = key(host)
    store.delete(KIND, name, ns)
    return read(store, host), True


def key(bmh) -> tuple[str, str]:
    """(namespace, name) of a BareMetalHost dict or tuple."""
    if isinstance(bmh, (tuple, list)):
        return bmh[0] or "default", bmh[1]
    md = bmh.get("metadata") or {}
    return md.get("namespace") or "default", md["name"]


def state(bmh: dict) -> str:
    return ((bmh.get("status") or {}).get("provisioning") or {}).get("state") or ""


def has_image(bmh: dict) -> bool:
    spec = bmh.get("spec") or {}
    return bool((spec.get("image") or {}).get("url") or (spec.get("customDeploy") or {}).get("method"))


def reboot_annotations(bmh: dict) -> dict:
    """``reboot.metal3.io`` and ``reboot.metal3.io/<key>`` annotations: key -> {"mode", "force"}.

        Empty or invalid values mean soft, as BMO reads them (baremetal-operator
    internal/controller/metal3.io/host_state_machine.go, annotations.go).
    """
    out = {}
    annotations = (bmh.get("metadata") or {}).get("annotations") or {}
    for k, v in annotations.items():
        if k != names.REBOOT_ANNOTATION and not k.startswith(names.REBOOT_ANNOTATION + "/"):
            continue
        mode, force = names.REBOOT_MODE_SOFT, False
        try:
            parsed = json.loads(v) if v else {}
        except ValueError:
            parsed = {}
        if isinstance(parsed, dict):
            if parsed.get("mode") == names.REBOOT_MODE_HARD:
                mode = names.REBOOT_MODE_HARD
            force = parsed.get("force") is True
        out[k] = {"mode": mode, "force": force}
    return out


def desired_power(bmh: dict) -> bool:
    """spec.online, forced off by any counted reboot annotation (in ``available`` only forced ones count)."""
    reboots = reboot_annotations(bmh)
    if state(bmh) in (names.BMH_STATE_AVAILABLE, names.BMH_STATE_READY):
        reboots = {k: v for k, v in reboots.items() if v["force"]}
    return bool((bmh.get("spec") or {}).get("online")) and not reboots


def goal(bmh: dict) -> str:
    """The provisioning state the spec asks for."""
    spec = bmh.get("spec") or {}
    if spec.get("externallyProvisioned"):
        return names.BMH_STATE_EXTERNALLY_PROVISIONED
    if has_image(bmh) and (
        # BMO starts provisioning only when online; a deployed host that is switched off stays provisioned
        spec.get("online") or state(bmh) in (names.BMH_STATE_PROVISIONING, names.BMH_STATE_PROVISIONED)
    ):
        return names.BMH_STATE_PROVISIONED
    return names.BMH_STATE_AVAILABLE


def image_deployed(bmh: dict) -> bool:
    """status.provisioning.image / customDeploy match the spec."""
    spec, prov = bmh.get("spec") or {}, (bmh.get("status") or {}).get("provisioning") or {}
    want, have = spec.get("image") or {}, prov.get("image") or {}
    if (spec.get("customDeploy") or {}).get("method"):
        return (prov.get("customDeploy") or {}).get("method") == spec["customDeploy"]["method"]
    return all(want.get(k) == have.get(k) for k in ("url", "checksum", "checksumType", "format"))


def reached(bmh: dict) -> bool:
    """The host is what its spec asks for (see the module docstring)."""
    st, want = state(bmh), goal(bmh)
    if st != want and not (want == names.BMH_STATE_AVAILABLE and st == names.BMH_STATE_READY):
        return False
    if want == names.BMH_STATE_PROVISIONED and not image_deployed(bmh):
        return False
    status = bmh.get("status") or {}
    if status.get("errorType"):
        return False
    return status.get("poweredOn") is not None and bool(status.get("poweredOn")) == desired_power(bmh)


def failed(bmh: dict) -> bool:
    """The host reports an error (status.errorType / errorMessage set)."""
    status = bmh.get("status") or {}
    return bool(status.get("errorType") or status.get("errorMessage"))


class NewErrors:
    """Which hosts' errors are new in one run: a task fails a host on those only (an error the host already had
    is BMO's backoff at work, retried, not a failure of this run).

    BMO zeroes errorCount when a deprovision completes and keeps the message until the next attempt succeeds:
    a count back at 0 is no new error, but a failure after it is, even with the same message.
    """

    def __init__(self):
        self._first: dict = {}
        self._reset: set = set()
        self._lock = threading.Lock()

    @staticmethod
    def _error(status: dict | None) -> tuple[int, str]:
        status = status or {}
        return int(status.get("errorCount") or 0), status.get("errorMessage") or ""

    def start(self, key, status: dict | None) -> None:
        """The host's error as this run first sees it (a later call for the same host changes nothing)."""
        with self._lock:
            self._first.setdefault(key, self._error(status))

    def is_new(self, key, status: dict | None) -> bool:
        """Whether ``status`` (a BareMetalHost's, or its summary) holds an error this run did not start with."""
        count, msg = self._error(status)
        with self._lock:
            count0, msg0 = self._first.setdefault(key, (count, msg))
            if not count:
                self._reset.add(key)
            again = key in self._reset and count > 0  # the same error again, from a new attempt
            return bool(msg) and (count > count0 or msg != msg0 or again)


def paused(bmh: dict) -> bool:
    return names.BMH_PAUSED_ANNOTATION in ((bmh.get("metadata") or {}).get("annotations") or {})


def summary(bmh: dict | None) -> dict:
    """What callers usually want to know about a host, in BMO's field names."""
    if bmh is None:
        return {"state": None, "deleted": True}
    status = bmh.get("status") or {}
    prov = status.get("provisioning") or {}
    ns, name = key(bmh)
    return {
        "namespace": ns,
        "name": name,
        "state": prov.get("state") or "",
        "goal": goal(bmh),
        "ID": prov.get("ID"),
        "poweredOn": status.get("poweredOn"),
        "operationalStatus": status.get("operationalStatus"),
        "errorType": status.get("errorType") or "",
        "errorMessage": status.get("errorMessage") or "",
        "errorCount": status.get("errorCount") or 0,
        "paused": paused(bmh),
    }


def hardware_of(store, bmh: dict) -> dict | None:
    """status.hardware, else the spec.hardware of the host's HardwareData (same name and namespace)."""
    hw = (bmh.get("status") or {}).get("hardware")
    if hw:
        return hw
    ns, name = key(bmh)
    try:
        data = store.get(HARDWARE_DATA_KIND, name, ns)
    except NotFound:  # no pre-collected data for this host
        return None
    return (data.get("spec") or {}).get("hardware") or None
