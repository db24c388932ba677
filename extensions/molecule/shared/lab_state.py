"""The real state of a cluster on the lab, as JSON, for the molecule scenarios' verify plays.

    lab_state.py --store '{"kind": "sqlite", "path": ...}' --cluster c --namespace ns
                 [--ironic-url URL] [--maas-url URL --maas-api-key KEY] [--workload-kubeconfig FILE]

Reads each source itself rather than trusting what the playbooks recorded:

* ``machines``: every Machine of the cluster in the store (name, role, phase, providerID, nodeRef, host or
  system id);
* ``ironic``: the Ironic node of each Metal3 machine's host (``<namespace>~<host>``): provision_state, power;
* ``maas``: the MAAS machine of each MaasMachine (status_name, power_state) through the MAAS API;
* ``nodes``: the Nodes of the cluster's workload API server (through its ``<cluster>-kubeconfig`` Secret, or
  the given kubeconfig file): name, Ready, providerID.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from pathlib import Path

ROOT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY") or Path(__file__).resolve().parents[3])
sys.path[:0] = [str(ROOT / "build"), str(ROOT)]

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store  # noqa: E402

CP_LABEL = "cluster.x-k8s.io/control-plane"


def machines(store, cluster: str, ns: str) -> list[dict]:
    out = []
    for m in store.list("Machine", ns, f"cluster.x-k8s.io/cluster-name={cluster}"):
        ref = m["spec"].get("infrastructureRef") or {}
        infra = None
        try:
            infra = store.get(ref.get("kind"), ref.get("name"), ns) if ref else None
        except NotFound:
            pass
        host = system_id = None
        if infra and infra["kind"] == "Metal3Machine":
            host = (infra["metadata"].get("annotations") or {}).get("metal3.io/BareMetalHost", "").rpartition("/")[2]
        elif infra:
            system_id = (infra.get("spec") or {}).get("systemID")
        out.append(
            {
                "name": m["metadata"]["name"],
                "role": "control-plane" if CP_LABEL in (m["metadata"].get("labels") or {}) else "worker",
                "phase": (m.get("status") or {}).get("phase"),
                "providerID": m["spec"].get("providerID"),
                "node": ((m.get("status") or {}).get("nodeRef") or {}).get("name"),
                "deleting": bool(m["metadata"].get("deletionTimestamp")),
                "host": host or None,
                "systemID": system_id,
            }
        )
    return out


def ironic_nodes(url: str, ns: str, hosts: list[str]) -> dict:
    import openstack

    conn = openstack.connect(auth_type="none", baremetal_endpoint_override=url, baremetal_api_version="1.81")
    out = {}
    for host in hosts:
        node = conn.baremetal.find_node(f"{ns}~{host}")
        out[host] = None if node is None else {"provision_state": node.provision_state, "power_state": node.power_state}
    return out


def maas_machines(url: str, key: str, system_ids: list[str]) -> dict:
    import time
    import uuid
    from urllib.parse import quote

    import requests

    consumer, token, secret = key.split(":")
    out = {}
    for sid in system_ids:
        auth = (
            f'OAuth oauth_consumer_key="{consumer}", oauth_token="{token}", oauth_signature_method="PLAINTEXT", '
            f'oauth_signature="{quote("&" + secret)}", oauth_nonce="{uuid.uuid4().hex}", '
            f'oauth_timestamp="{int(time.time())}", oauth_version="1.0"'
        )
        resp = requests.get(f"{url.rstrip('/')}/api/2.0/machines/{sid}/", headers={"Authorization": auth}, timeout=30)
        resp.raise_for_status()
        body = resp.json()
        out[sid] = {"status_name": body.get("status_name"), "power_state": body.get("power_state")}
    return out


def workload_nodes(kubeconfig_text: str) -> list[dict]:
    import yaml
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config_dict(yaml.safe_load(kubeconfig_text)))
    out = []
    for node in api.list_node(_request_timeout=30).items:
        ready = next((c.status for c in node.status.conditions or [] if c.type == "Ready"), "Unknown")
        out.append({"name": node.metadata.name, "ready": ready, "providerID": node.spec.provider_id})
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True, help="the store option as JSON")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--ironic-url")
    parser.add_argument("--maas-url")
    parser.add_argument("--maas-api-key")
    parser.add_argument("--workload-kubeconfig")
    args = parser.parse_args()
    store = open_store(json.loads(args.store))
    state = {"machines": machines(store, args.cluster, args.namespace)}
    if args.ironic_url:
        hosts = [m["host"] for m in state["machines"] if m["host"]]
        state["ironic"] = ironic_nodes(args.ironic_url, args.namespace, hosts)
    if args.maas_url:
        ids = [m["systemID"] for m in state["machines"] if m["systemID"]]
        state["maas"] = maas_machines(args.maas_url, args.maas_api_key, ids)
    if args.workload_kubeconfig:
        text = Path(args.workload_kubeconfig).read_text()
    else:
        try:
            secret = store.get("Secret", f"{args.cluster}-kubeconfig", args.namespace)
            text = base64.b64decode(secret["data"]["value"]).decode()
        except NotFound:
            text = None
    state["nodes"] = workload_nodes(text) if text and state["machines"] else []
    store.close()
    json.dump(state, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
