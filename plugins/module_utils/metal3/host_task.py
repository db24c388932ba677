# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The baremetalhost task: write the BareMetalHosts, then move them with the host driver.

Shared by the module (plugins/modules/baremetalhost.py) and its action plugin, which runs it inside
ansible-playbook so that registration, inspection and cleaning print a line per host as they move instead
of a silent wait of up to ``wait_timeout``.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base, drivers
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host as bmh

# BMO's DEPLOY_KERNEL_URL / DEPLOY_RAMDISK_URL / DEPLOY_ISO_URL: set on the node at registration (configureNode),
# since inspection and cleaning boot that ramdisk before any deploy
DEPLOY_IMAGES = ("deploy_kernel", "deploy_ramdisk", "deploy_iso")
HOST_OPTIONS = ("name", "namespace", "spec", "labels", "annotations", "bmc_username", "bmc_password", "hardware")


def run(p: dict, store, ns_default: str, check: bool, progress=None) -> dict:
    """``{changed, before, after, hosts, failures}``; ``progress(key, message)`` as each host's step changes."""
    # hosts: [] (every host of a list filtered away) is nothing to do, not one host without a name
    entries = p["hosts"] if p["hosts"] is not None else [{k: p[k] for k in HOST_OPTIONS}]
    present = p["state"] == "present"
    # options are checked before anything is written (the driver connects only when used)
    options = {"poll": p["wait_sleep"]}
    if p["host_driver"] == "ironic":
        options.update({k: p[k] for k in ("cloud", "ironic_url", "boot_iso", *DEPLOY_IMAGES) if p.get(k)})
        if p.get("max_provisioning_retries") is not None:
            options["max_provisioning_retries"] = p["max_provisioning_retries"]
    driver = drivers.get_driver(p["host_driver"], options)
    keys, written, befores, predicted = [], {}, {}, {}
    for entry in entries:
        objs = bmh.build(entry, ns_default)
        key = base.key(objs[0])
        keys.append(key)
        before = bmh.get(store, "BareMetalHost", key[1], key[0])
        befores[key] = before
        if present:
            applied = bmh.apply(store, objs, check=check)
            written[key], predicted[key] = applied["changed"], applied["after"]
        else:
            written[key] = before is not None
    results = {}
    if not check:
        try:
            live = [k for k in keys if present or befores[k] is not None]
            for res in bmh.reconcile(
                store,
                driver,
                live,
                delete=not present,
                wait=p["wait"],
                wait_state=p["wait_state"],
                timeout=p["wait_timeout"] if p["wait"] else None,
                workers=p["workers"],
                progress=progress,
            ):
                results[res.key] = res
        finally:
            driver.close()
    out, afters, failures = [], [], []
    for key in keys:
        res = results.get(f"{key[0]}/{key[1]}")
        if check:
            after = predicted.get(key)  # absent: None, as it would be once removed
        else:
            after = bmh.get(store, "BareMetalHost", key[1], key[0])
        summary = base.summary(after) if after else {"state": None}
        failed = bool(res and (res.failed or (p["wait"] and not res.done)))
        item = {
            "name": key[1],
            "namespace": key[0],
            "changed": bool(written[key] or (res and res.changed)),
            "failed": failed,
            "message": res.message if res else ("would be written" if written[key] else ""),
            "state": summary.get("state"),
            "poweredOn": summary.get("poweredOn"),
            "errorType": summary.get("errorType", ""),
            "errorMessage": summary.get("errorMessage", ""),
            "object": after,
        }
        out.append(item)
        afters.append(after)
        if failed:
            failures.append(f"BareMetalHost {key[0]}/{key[1]}: {item['message']}")
    return {
        "changed": any(i["changed"] for i in out),
        "before": [befores[k] for k in keys],
        "after": afters,
        "hosts": out,
        "failures": failures,
    }
