"""Watching a workload cluster while a playbook changes it: an API probe and etcd membership, every second.

The probe asks the workload API (``/version`` and the Node list) once a second and counts failures. The
membership watch reads the store's Machines first and the etcd member list second, each second, with the
test's own client certificate (from the lab's PKI helper, signed by the cluster's etcd CA): a member named
like the Node of a Machine that was already gone before the members were read is a stale member.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from lab.kube_build import pki as lab_pki

CP_LABEL = "cluster.x-k8s.io/control-plane"


class Watch:
    def __init__(self, e, interval: float = 1.0):
        self.e, self.interval = e, interval
        self.stop_event = threading.Event()
        self.probes = 0
        self.failures: list[str] = []
        self.samples: list[dict] = []
        self.stale: list[str] = []
        self.node_of: dict[str, str] = {}  # Machine -> its Node, as seen
        self._ctx = None
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self._thread.join(timeout=60)

    # -- the etcd client of the test ----------------------------------------------------------------------------
    def _context(self, store) -> ssl.SSLContext:
        if self._ctx is None:
            data = store.get("Secret", f"{self.e.name}-etcd", self.e.ns)["data"]
            ca, key = base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"])
            cert, ckey = lab_pki.issue(ca, key, "lifecycle-test")
            d = Path(tempfile.mkdtemp(dir=self.e.tmp))
            (d / "c.pem").write_bytes(cert)
            (d / "k.pem").write_bytes(ckey)
            (d / "ca.pem").write_bytes(ca)
            ctx = ssl.create_default_context(cafile=str(d / "ca.pem"))
            ctx.load_cert_chain(str(d / "c.pem"), str(d / "k.pem"))
            self._ctx = ctx
        return self._ctx

    def members(self, store, machines: list[dict], nodes: dict) -> list[str] | None:
        urls = []
        for m in machines:
            node = nodes.get(((m.get("status") or {}).get("nodeRef") or {}).get("name")) or {}
            urls += [f"https://{a}:2379" for a in node.get("addresses", [])]
        for url in dict.fromkeys(urls):
            req = urllib.request.Request(url + "/v3/cluster/member/list", data=b"{}", method="POST")
            try:
                with urllib.request.urlopen(req, timeout=3, context=self._context(store)) as resp:
                    return sorted(m.get("name", "") for m in json.loads(resp.read()).get("members") or [])
            except OSError:
                continue
        return None

    # -- the loop -----------------------------------------------------------------------------------------------
    def _loop(self):
        from kubernetes import client as k8s

        api = None
        while not self.stop_event.is_set():
            t0 = time.monotonic()
            nodes = {}
            try:
                api = api or self.e.workload_api()
                k8s.VersionApi(api).get_code(_request_timeout=5)
                for n in k8s.CoreV1Api(api).list_node(_request_timeout=5).items:
                    nodes[n.metadata.name] = {
                        "addresses": [a.address for a in n.status.addresses or [] if a.type == "InternalIP"]
                    }
                self.probes += 1
            except Exception as exc:  # noqa: BLE001 - every failure counts, whatever it is
                self.probes += 1
                self.failures.append(f"{time.strftime('%H:%M:%S')} {type(exc).__name__}: {exc}"[:300])
            store = self.e.store()
            try:
                machines = store.list("Machine", self.e.ns)
                members = self.members(store, [m for m in machines if CP_LABEL in m["metadata"]["labels"]], nodes)
            except Exception:  # noqa: BLE001 - the store or etcd between two states: next second
                members, machines = None, []
            finally:
                store.close()
            sample = {
                "t": time.time(),
                "machines": {
                    m["metadata"]["name"]: {
                        "cp": CP_LABEL in m["metadata"]["labels"],
                        "version": m["spec"].get("version"),
                        "deleting": bool(m["metadata"].get("deletionTimestamp")),
                        "node": ((m.get("status") or {}).get("nodeRef") or {}).get("name"),
                    }
                    for m in machines
                },
                "members": members,
            }
            for mname, v in sample["machines"].items():
                if v["node"]:
                    self.node_of[mname] = v["node"]
            if members is not None:
                # a Machine seen before and gone now had its member removed first: its node's member is stale
                # (Metal3 Nodes are named like their host: a reused host's new Machine, still without its nodeRef,
                # may be the member's owner - then it is not counted)
                gone = {self.node_of[n] for n in self.node_of if n not in sample["machines"]}
                gone -= {v["node"] for v in sample["machines"].values() if v["node"]}
                if any(v["cp"] and not v["node"] for v in sample["machines"].values()):
                    gone = set()
                self.stale += [f"{time.strftime('%H:%M:%S')} member {n}" for n in members if n in gone]
            self.samples.append(sample)
            self.stop_event.wait(max(0.0, self.interval - (time.monotonic() - t0)))
