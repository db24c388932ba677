"""The node simulator's reconcile step: hosts -> cloud-init -> kubeadm -> kubelet heartbeats.

State (``cfg.data("nodesim")/state.json``) survives a restart of the simulator:

- ``hosts``: per host key, the instance it last bootstrapped and how that went
  (``phase``: pending, initialized, joined, failed, no-user-data, no-kubeadm);
- ``clusters``: per controlPlaneEndpoint, its API server and its hosts;
- ``nodes``: per ``<endpoint>/<node name>``, the kubelet that registered it
  (host key and instance), its last heartbeat and whether the lifecycle
  controller has marked it Unknown.  A Node whose host is powered off,
  deprovisioned, redeployed or whose kubelet is stopped stops heartbeating.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time

from lab import process
from lab.config import LabConfig
from lab.nodesim import cloudinit, clusters, kubeadm, kubelet, sources
from lab.nodesim.api import ApiError

LOG = logging.getLogger("nodesim")

# Seconds.  grace is kube-controller-manager's --node-monitor-grace-period (50 s since 1.32);
# lease_renew the kubelet's (a quarter of the 40 s lease); status_report its nodeStatusReportFrequency.
DEFAULT_TIMINGS = {"poll": 2.0, "lease_renew": 10.0, "status_report": 60.0, "grace": 50.0, "discovery_timeout": 300.0}


class Simulator:
    def __init__(self, cfg: LabConfig):
        self.cfg = cfg
        self.path = cfg.data("nodesim") / "state.json"
        self.lock = threading.Lock()  # guards timings and kubelet_stopped (the control API writes them)
        self.state = self._load()
        self.snapshot: dict = {}
        self._conn = None

    # --- state ------------------------------------------------------------------

    def _load(self) -> dict:
        state = {"timings": dict(DEFAULT_TIMINGS), "hosts": {}, "clusters": {}, "nodes": {}, "kubelet_stopped": []}
        if self.path.exists():
            state.update(json.loads(self.path.read_text()))
        env = os.environ.get("BMCAPI_NODESIM_TIMINGS")
        if env:
            state["timings"].update({k: float(v) for k, v in json.loads(env).items()})
        return state

    def save(self) -> None:
        with self.lock:
            text = json.dumps(self.state, indent=1, sort_keys=True)
            self.snapshot = json.loads(text)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(self.path)

    def timing(self, key: str) -> float:
        with self.lock:
            return float(self.state["timings"][key])

    def set_timings(self, values: dict) -> dict:
        bad = set(values) - set(DEFAULT_TIMINGS)
        if bad:
            raise ValueError(f"unknown timings {sorted(bad)}; known: {sorted(DEFAULT_TIMINGS)}")
        with self.lock:
            self.state["timings"].update({k: float(v) for k, v in values.items()})
            return dict(self.state["timings"])

    def set_kubelet(self, node: str, running: bool, cluster: str | None = None) -> list[str]:
        """Stop or start the kubelet of Node ``node`` (in the cluster named or at the endpoint given)."""
        with self.lock:
            # from the snapshot: the reconcile thread changes the live state without this lock
            snap = self.snapshot
            keys = [
                k
                for k, n in snap.get("nodes", {}).items()
                if n["name"] == node
                and (cluster is None or cluster in (n["endpoint"], snap["clusters"].get(n["endpoint"], {}).get("name")))
            ]
            stopped = set(self.state["kubelet_stopped"])
            stopped = stopped - set(keys) if running else stopped | set(keys)
            self.state["kubelet_stopped"] = sorted(stopped)
            return keys

    # --- hosts --------------------------------------------------------------------

    def _hosts(self) -> dict[str, sources.Host] | None:
        """Every host the sources could list now; a source that cannot answer leaves its hosts out (None)."""
        out: dict[str, sources.Host] = {}
        seen_ok = set()
        if process.pid_of(self.cfg, "ironic") is not None:
            try:
                if self._conn is None:
                    self._conn = sources.ironic_connection(self.cfg)
                out.update({h.key: h for h in sources.ironic_hosts(self.cfg, self._conn)})
                seen_ok.add("ironic")
            except Exception as exc:  # noqa: BLE001 - a source down must not stop the others
                LOG.warning("ironic: %s", exc)
                self._conn = None
        if process.pid_of(self.cfg, "maas") is not None:
            try:
                out.update({h.key: h for h in sources.maas_hosts(self.cfg)})
                seen_ok.add("maas")
            except Exception as exc:  # noqa: BLE001
                LOG.warning("maas: %s", exc)
        self._sources_ok = seen_ok
        return out

    def _answered(self, key: str) -> bool:
        return key.split("/", 1)[0] in self._sources_ok

    def step(self) -> None:
        now = time.time()
        hosts = self._hosts()
        for key, host in hosts.items():
            entry = self.state["hosts"].get(key)
            if host.instance and (entry is None or entry.get("instance") != host.instance):
                entry = {"instance": host.instance, "name": host.name, "phase": "pending", "first_try": None}
                self.state["hosts"][key] = entry
            if entry is not None and entry["phase"] == "pending" and host.up and entry["instance"] == host.instance:
                try:
                    self._bootstrap(host, entry, now)
                except Exception as exc:  # noqa: BLE001 - one odd host must not stall every other one
                    LOG.exception("%s: bootstrap", key)
                    entry["error"] = f"{type(exc).__name__}: {exc}"
        for key in [k for k in self.state["hosts"] if self._answered(k) and k not in hosts]:
            del self.state["hosts"][key]  # the host itself is gone (Ironic node deleted, MAAS machine removed)
        self._clusters(hosts)
        self._heartbeats(hosts, time.time())
        self.save()

    def _alive(self, hosts: dict, node: dict) -> bool:
        host = hosts.get(node["host"])
        return bool(host and host.up and host.instance == node["instance"])

    # --- cloud-init + kubeadm ----------------------------------------------------------

    def _bootstrap(self, host: sources.Host, entry: dict, now: float) -> None:
        entry["first_try"] = entry.get("first_try") or now
        try:
            user_data, meta, net = host.read()
            if not user_data:
                entry.update(phase="no-user-data", error=None)
                return
            rendered = cloudinit.render(user_data, meta, net)
            boot = kubeadm.bootstrap(cloudinit.parse(rendered), meta.get("local-hostname") or host.name)
            if boot is None:
                entry.update(phase="no-kubeadm", error=None)
                return
            ip = host.ip or sources._network_ip(net)
            if boot.phase == "init":
                self._init(host, entry, boot, ip, now)
            else:
                self._join(host, entry, boot, ip, now)
        except (cloudinit.CloudInitError, kubeadm.KubeadmError, ValueError) as exc:
            entry.update(phase="failed", error=str(exc))
            LOG.warning("%s: bootstrap failed: %s", host.key, exc)
        except kubelet.JoinError as exc:
            timed_out = now - entry["first_try"] > self.timing("discovery_timeout")
            entry.update(phase="pending" if exc.retry and not timed_out else "failed", error=str(exc))
            LOG.info("%s: kubeadm join: %s", host.key, exc)
        except (sources.SourceError, OSError, ApiError, process.LabError) as exc:
            # not there yet (virtual media, an API server starting): try again next round
            entry["error"] = str(exc)
            LOG.info("%s: %s", host.key, exc)

    def _init(self, host, entry, boot: kubeadm.Bootstrap, ip, now) -> None:
        endpoint = boot.endpoint
        h, port = clusters.split_endpoint(endpoint)
        old = self.state["clusters"].get(endpoint)
        if old is not None and old.get("init_instance") != host.instance:
            # a new control plane at this address: the old cluster's data goes (a fresh etcd on real hosts)
            clusters.stop(self.cfg, endpoint, purge=True)
            self._forget_cluster(endpoint)
        if endpoint not in self.state["clusters"]:
            clusters.stop(self.cfg, endpoint, purge=True)
            clusters.save_ca(self.cfg, endpoint, boot.ca_cert, boot.ca_key, boot.sa_key)
            self.state["clusters"][endpoint] = {
                "name": boot.cluster_name,
                "endpoint": endpoint,
                "bind": clusters.bind_address(h, ip),
                "port": port,
                "version": boot.kubernetes_version,
                "init_instance": host.instance,
                "control_plane": [[host.key, host.instance]],
                "members": [[host.key, host.instance]],
            }
        cluster = self.state["clusters"][endpoint]
        info = clusters.start(self.cfg, cluster)
        cluster["version"] = cluster.get("version") or info.get("version")
        LOG.info("cluster %s (%s): API server ready after %ss", endpoint, boot.cluster_name, info.get("ready_after_s"))
        api = clusters.client(self.cfg, cluster)
        kubelet.upload_init_config(api, boot, f"https://{endpoint}")
        self._register(api, host, entry, boot, cluster, ip, now, phase="initialized")

    def _join(self, host, entry, boot: kubeadm.Bootstrap, ip, now) -> None:
        cluster = self.state["clusters"].get(boot.endpoint)
        if cluster is None or not clusters.running(self.cfg, boot.endpoint):
            raise kubelet.JoinError(f"unable to reach the API server at {boot.endpoint}", retry=True)
        api = clusters.client(self.cfg, cluster)
        ca = (clusters.ca_dir(self.cfg, boot.endpoint) / "ca.crt").read_bytes()
        kubelet.check_join(api, boot, ca, now)
        pair = [host.key, host.instance]
        if pair not in cluster["members"]:
            cluster["members"].append(pair)
        if boot.control_plane and pair not in cluster["control_plane"]:
            cluster["control_plane"].append(pair)
        self._register(api, host, entry, boot, cluster, ip, now, phase="joined")

    def _register(self, api, host, entry, boot, cluster, ip, now, phase) -> None:
        kubelet.register(api, boot, ip=ip, version=cluster.get("version"), system_uuid=host.system_uuid, now=now)
        kubelet.renew_lease(api, boot.node_name, now)
        key = f"{cluster['endpoint']}/{boot.node_name}"
        with self.lock:
            # a new instance brings a new kubelet: a fault injected into the old one does not carry over
            self.state["kubelet_stopped"] = [k for k in self.state["kubelet_stopped"] if k != key]
        self.state["nodes"][key] = {
            "name": boot.node_name,
            "endpoint": cluster["endpoint"],
            "host": host.key,
            "instance": host.instance,
            "last_renew": now,
            "last_status": now,
            "unknown": False,
            "provider_id": boot.provider_id,
        }
        entry.update(phase=phase, error=None, node=boot.node_name, cluster=cluster["endpoint"])
        LOG.info("%s: kubeadm %s: Node %s registered at %s", host.key, boot.phase, boot.node_name, cluster["endpoint"])

    # --- API servers and heartbeats ------------------------------------------------------

    def _forget_cluster(self, endpoint: str) -> None:
        self.state["clusters"].pop(endpoint, None)
        for key in [k for k, n in self.state["nodes"].items() if n["endpoint"] == endpoint]:
            del self.state["nodes"][key]

    def _member_state(self, hosts, pair) -> str:
        """ "up", "down" (provisioned, off) or "gone" (deprovisioned or redeployed); "unknown" when not listed."""
        key, instance = pair
        if not self._answered(key):
            return "unknown"
        host = hosts.get(key)
        if host is None or host.instance != instance:
            return "gone"
        return "up" if host.up else "down"

    def _clusters(self, hosts) -> None:
        for endpoint, cluster in list(self.state["clusters"].items()):
            members = [self._member_state(hosts, p) for p in cluster["members"]]
            if members and all(s == "gone" for s in members):
                seen = {k: (hosts[k].instance if k in hosts else None) for k, _ in cluster["members"]}
                LOG.info(
                    "cluster %s: no host left (%s, now %s); its API server and data go",
                    endpoint,
                    cluster["members"],
                    seen,
                )
                clusters.stop(self.cfg, endpoint, purge=True)
                self._forget_cluster(endpoint)
                continue
            cp = [self._member_state(hosts, p) for p in cluster["control_plane"]]
            want = any(s in ("up", "unknown") for s in cp)
            if want and not clusters.running(self.cfg, endpoint):
                try:
                    clusters.start(self.cfg, cluster)
                except Exception as exc:  # noqa: BLE001 - retried next round
                    LOG.warning("cluster %s: API server: %s", endpoint, exc)
            elif not want and clusters.running(self.cfg, endpoint):
                LOG.info("cluster %s: no control-plane host up; its API server stops", endpoint)
                clusters.stop(self.cfg, endpoint)

    def _heartbeats(self, hosts, now: float) -> None:
        with self.lock:
            stopped = set(self.state["kubelet_stopped"])
        renew, report, grace = self.timing("lease_renew"), self.timing("status_report"), self.timing("grace")
        for key, node in list(self.state["nodes"].items()):
            endpoint = node["endpoint"]
            cluster = self.state["clusters"].get(endpoint)
            if cluster is None or not clusters.running(self.cfg, endpoint):
                continue
            if not self._answered(node["host"]):
                continue
            api = clusters.client(self.cfg, cluster)
            try:
                if self._alive(hosts, node) and key not in stopped:
                    if node["unknown"] or now - node["last_status"] >= report:
                        kubelet.post_ready(api, node["name"], now)
                        node.update(last_status=now, unknown=False)
                    if now - node["last_renew"] >= renew:
                        kubelet.renew_lease(api, node["name"], now)
                        node["last_renew"] = now
                elif not node["unknown"] and now - node["last_renew"] > grace:
                    kubelet.mark_unknown(api, node["name"], now)
                    node["unknown"] = True
                    LOG.info("Node %s: no heartbeat for %.0fs: Ready=Unknown", key, now - node["last_renew"])
            except Exception as exc:  # noqa: BLE001 - an API server restarting, a Node deleted meanwhile
                LOG.warning("Node %s: %s", key, exc)
            if node["unknown"] and self._member_state(hosts, [node["host"], node["instance"]]) == "gone":
                # that kubelet is gone for good; the Node stays (the collection deletes it, as Cluster API does)
                del self.state["nodes"][key]
