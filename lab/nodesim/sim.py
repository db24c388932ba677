"""The node simulator's reconcile step: hosts -> cloud-init -> kubeadm -> kubelet heartbeats.

State (``cfg.data("nodesim")/state.json``) survives a restart of the simulator:

- ``hosts``: per host key, the instance it last bootstrapped and how that went
  (``phase``: pending, initialized, joined, failed, no-user-data, no-kubeadm);
- ``clusters``: per controlPlaneEndpoint, its API server, its hosts and its
  etcd members (``etcd.members``: per node name the host, instance, address,
  member ID and how its etcd was started; ``etcd.proxy_port``: the API
  server's way to them);
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
from lab.nodesim import agent, cloudinit, clusters, etcd, etcdproxy, kubeadm, kubelet, sources
from lab.nodesim.api import ApiError

LOG = logging.getLogger("nodesim")

# Seconds.  grace is kube-controller-manager's --node-monitor-grace-period (50 s since 1.32);
# lease_renew the kubelet's (a quarter of the 40 s lease); status_report its nodeStatusReportFrequency;
# etcd_timeout kubeadm's EtcdAPICallTimeout (a control-plane join's member add and promotion give up after it).
DEFAULT_TIMINGS = {
    "poll": 2.0,
    "lease_renew": 10.0,
    "status_report": 60.0,
    "grace": 50.0,
    "discovery_timeout": 300.0,
    "etcd_timeout": 120.0,
}
# the kubelet's CrashLoopBackOff for a static pod that exits: 10 s, doubling, at most 5 min
BACKOFF_FIRST, BACKOFF_MAX = 10.0, 300.0
# kubeadm's EtcdAPICallRetryInterval
ETCD_RETRY = 0.5


class Simulator:
    def __init__(self, cfg: LabConfig):
        self.cfg = cfg
        self.path = cfg.data("nodesim") / "state.json"
        self.lock = threading.Lock()  # guards timings and kubelet_stopped (the control API writes them)
        self.state = self._load()
        self.snapshot: dict = {}
        self._conn = None
        self.proxies: dict[str, etcdproxy.Forwarder] = {}
        # per endpoint served on its hosts: control-plane host address -> its listener at the endpoint's port
        self.listeners: dict[str, dict[str, etcdproxy.Forwarder]] = {}
        self.agents = agent.Agents(cfg)
        for cluster in self.state["clusters"].values():
            for member in cluster.get("etcd", {}).get("members", {}).values():
                member["was_running"] = False  # a new simulator: whatever ran before was stopped with the old one

    # --- state ------------------------------------------------------------------

    def _load(self) -> dict:
        state = {
            "timings": dict(DEFAULT_TIMINGS),
            "hosts": {},
            "clusters": {},
            "nodes": {},
            "kubelet_stopped": [],
            "etcd_stopped": [],
        }
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

    def set_etcd(self, node: str, running: bool, cluster: str | None = None) -> list[str]:
        """Stop or start the etcd member of Node ``node`` though its host stays up (a crashed etcd, a failed disk).

        Keys are ``<endpoint>/<node>``; a stopped member stays stopped (no kubelet restart) until started here.
        """
        with self.lock:
            snap = self.snapshot
            keys = [
                f"{endpoint}/{name}"
                for endpoint, c in snap.get("clusters", {}).items()
                if cluster is None or cluster in (endpoint, c.get("name"))
                for name in (c.get("etcd") or {}).get("members", {})
                if name == node
            ]
            stopped = set(self.state["etcd_stopped"])
            stopped = stopped - set(keys) if running else stopped | set(keys)
            self.state["etcd_stopped"] = sorted(stopped)
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
        if "ironic" in self._sources_ok:
            try:
                self.state["agents"] = self.agents.step(
                    {h.system_uuid: h.busy for h in hosts.values() if h.system_uuid}
                )
            except Exception as exc:  # noqa: BLE001 - the BMCs or the emulator busy: next round
                LOG.warning("agents: %s", exc)
        for key, host in hosts.items():
            entry = self.state["hosts"].get(key)
            if host.instance and (entry is None or entry.get("instance") != host.instance):
                entry = {
                    "instance": host.instance,
                    "name": host.name,
                    "phase": "pending",
                    "first_try": None,
                    "source": host.source,
                }
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
        etcd_ip = _etcd_address(boot, ip, host.key)
        old = self.state["clusters"].get(endpoint)
        if old is not None and old.get("init_instance") != host.instance:
            # a new control plane at this address: the old cluster's data goes (a fresh etcd on real hosts)
            clusters.stop(self.cfg, endpoint, purge=True)
            self._forget_cluster(endpoint)
        if endpoint not in self.state["clusters"]:
            clusters.stop(self.cfg, endpoint, purge=True)
            # kubeadm init makes the etcd CA when the data brings none (CABPK always brings <cluster>-etcd)
            etcd_ca = (boot.etcd_ca_cert, boot.etcd_ca_key) if boot.etcd_ca_cert and boot.etcd_ca_key else None
            if etcd_ca is None:
                from lab.kube_build import pki

                etcd_ca = pki.new_ca("etcd-ca")
            clusters.save_ca(self.cfg, endpoint, boot.ca_cert, boot.ca_key, boot.sa_key, etcd_ca)
            bind = clusters.bind_address(h)
            self.state["clusters"][endpoint] = {
                "name": boot.cluster_name,
                "endpoint": endpoint,
                "bind": bind or "127.0.0.1",
                "port": port if bind else clusters.private_port(),
                "on_hosts": bind is None,
                "api_hosts": {},  # control-plane host -> [instance, address]: where kube-apiserver runs
                "cert_ips": [],
                "version": boot.kubernetes_version,
                "init_instance": host.instance,
                "control_plane": [[host.key, host.instance]],
                "members": [[host.key, host.instance]],
                "etcd": {"proxy_port": 0, "members": {}},
            }
        cluster = self.state["clusters"][endpoint]
        self._api_host(cluster, host, ip or etcd_ip)
        members = cluster["etcd"]["members"]
        if boot.node_name not in members:
            # kubeadm init's etcd phase: a one-member cluster, --initial-cluster-state=new
            initial = f"{boot.node_name}={etcd.peer_url(etcd_ip)}"
            members[boot.node_name] = self._member(host, boot.node_name, etcd_ip, initial, "new")
        self._start_member(cluster, members[boot.node_name], now)
        info = clusters.start(self.cfg, cluster, self._proxy(cluster).port)
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
        if boot.control_plane:
            etcd_ip = _etcd_address(boot, ip, host.key)
            self._etcd_join(host, entry, boot, cluster, etcd_ip, now)
            self._api_host(cluster, host, ip or etcd_ip)
        pair = [host.key, host.instance]
        if pair not in cluster["members"]:
            cluster["members"].append(pair)
        if boot.control_plane and pair not in cluster["control_plane"]:
            cluster["control_plane"].append(pair)
        self._register(api, host, entry, boot, cluster, ip, now, phase="joined")

    # --- the API on the control-plane hosts ----------------------------------------------

    def _api_host(self, cluster: dict, host, address: str) -> None:
        """Host ``host`` runs a kube-apiserver (kubeadm init, or join --control-plane) answering on ``address``."""
        if not clusters.on_hosts(cluster):
            return
        cluster.setdefault("api_hosts", {})[host.key] = [host.instance, address]
        ips = cluster.setdefault("cert_ips", [])
        if address not in ips:
            ips.append(address)
            if clusters.running(self.cfg, cluster["endpoint"]):
                clusters.reissue_serving_cert(self.cfg, cluster)
        self._listeners(cluster, None)

    def _listeners(self, cluster: dict, hosts) -> None:
        """The endpoint's port on each running control-plane host's address, passed to the cluster's API server.

        A host's listener opens once the API server presents a certificate naming that address (a client verifies
        it) and closes when the host is off or gone, or no API server runs: a client that reaches a released
        machine's address finds nothing there, as on real hosts. With ``hosts`` None only new hosts are added.
        """
        endpoint = cluster["endpoint"]
        if not clusters.on_hosts(cluster):
            return
        _, port = clusters.split_endpoint(endpoint)
        open_ = self.listeners.setdefault(endpoint, {})
        running = clusters.running(self.cfg, endpoint)
        want = set()
        for key, (instance, address) in list(cluster.get("api_hosts", {}).items()):
            state = "up" if hosts is None else self._member_state(hosts, [key, instance])
            if state == "gone":
                del cluster["api_hosts"][key]
            elif state in ("up", "unknown") and running:
                want.add(address)
        for address in set(open_) - want:
            if hosts is not None:
                open_.pop(address).close()
                LOG.info("cluster %s: API at %s:%s closed (its host is down or gone)", endpoint, address, port)
        for address in sorted(want - set(open_)):
            if not clusters.serves_for(self.cfg, cluster, address):
                continue  # its certificate is being reloaded: next round
            try:
                open_[address] = etcdproxy.Forwarder(f"api-{address}", port, host=address, fallback=False)
            except OSError as exc:
                LOG.warning("cluster %s: API at %s:%s: %s", endpoint, address, port, exc)
                continue
            open_[address].targets = ((cluster["bind"], cluster["port"]),)
            LOG.info("cluster %s: API at %s:%s", endpoint, address, port)

    def _close_listeners(self, endpoint: str) -> None:
        for fwd in self.listeners.pop(endpoint, {}).values():
            fwd.close()

    # --- etcd ---------------------------------------------------------------------------

    @staticmethod
    def _member(host, name: str, ip: str, initial_cluster: str, state: str) -> dict:
        return {
            "name": name,
            "ip": ip,
            "host": host.key,
            "instance": host.instance,
            "initial_cluster": initial_cluster,
            "state": state,
            "id": None,
            "was_running": False,
            "exits": 0,
            "next_start": 0.0,
        }

    def _start_member(self, cluster: dict, member: dict, now: float) -> None:
        slug = clusters.slug(cluster["endpoint"])
        ca = clusters.etcd_ca(self.cfg, cluster["endpoint"])
        if not etcd.running(self.cfg, slug, member["name"]):
            etcd.start(self.cfg, slug, member, *ca)  # the CA makes its certificates when it has none yet
            LOG.info("cluster %s: etcd member %s started at %s", cluster["endpoint"], member["name"], member["ip"])
        member["was_running"] = True
        self._proxy(cluster)

    def _etcd_client(self, cluster: dict, files_of: str, exclude: str | None = None) -> etcd.Client:
        """A client of the cluster's members with the healthcheck-client certificate of member ``files_of``."""
        slug = clusters.slug(cluster["endpoint"])
        p = etcd.member_dir(self.cfg, slug, files_of) / "pki"
        urls = [etcd.client_url(m["ip"]) for n, m in cluster["etcd"]["members"].items() if n != exclude]
        return etcd.Client(urls, p / "ca.crt", p / "healthcheck-client.crt", p / "healthcheck-client.key")

    def _etcd_join(self, host, entry, boot: kubeadm.Bootstrap, cluster: dict, ip: str, now: float) -> None:
        """kubeadm join's control-plane-join/etcd phase: add this host as a learner, start it, promote it.

        As kubeadm: the member is added through the etcd API (with a client
        certificate of the etcd CA the join data carries) unless a member
        with this peer URL is there already; etcd refuses without quorum, and
        after ``etcd_timeout`` of refusals the join fails.
        """
        if not (boot.etcd_ca_cert and boot.etcd_ca_key):
            raise kubeadm.KubeadmError(
                f"kubeadm join --control-plane: {kubeadm.PKI}/etcd/ca.crt and ca.key are not in write_files"
            )
        name, slug = boot.node_name, clusters.slug(cluster["endpoint"])
        members = cluster["etcd"]["members"]
        mine = members.get(name)
        if mine is not None and (mine["host"], mine["instance"]) != (host.key, host.instance):
            # that name belonged to another machine: its data is not this host's
            etcd.stop(self.cfg, slug, name, wipe=True)
            del members[name]
            mine = None
        if mine is None:
            d = etcd.member_dir(self.cfg, slug, name)
            etcd.write_pki(d, boot.etcd_ca_cert, boot.etcd_ca_key, name, ip)
        first = entry.setdefault("etcd_first_try", now)
        peer = etcd.peer_url(ip)
        try:
            client = self._etcd_client(cluster, files_of=name, exclude=name)
            listed = client.member_list()
            found = [m for m in listed if peer in (m.get("peerURLs") or [])]
            if found:
                learner = found[0]  # added by an earlier try: not added twice (kubeadm's addMember)
            else:
                resp = client.member_add(peer, learner=True)
                learner, listed = resp["member"], resp.get("members") or []
                LOG.info("%s: etcd member %s added as learner (%s)", host.key, name, learner["ID"])
            if mine is None:
                initial = ",".join(
                    f"{name if peer in (m.get('peerURLs') or []) else (m.get('name') or format(int(m['ID']), 'x'))}"
                    f"={(m.get('peerURLs') or [''])[0]}"
                    for m in listed
                )
                mine = members[name] = self._member(host, name, ip, initial, "existing")
            mine["id"] = learner["ID"]
            self._start_member(cluster, mine, now)
            if found and not found[0].get("isLearner"):
                return
            deadline = time.monotonic() + max(5.0, 4 * self.timing("poll"))
            while True:
                try:
                    client.member_promote(int(learner["ID"]))
                    LOG.info("%s: etcd member %s promoted to voter", host.key, name)
                    return
                except etcd.EtcdError as exc:
                    if str(exc).endswith("can only promote a learner member"):
                        return  # a voter already (ErrMemberNotLearner)
                    if time.monotonic() > deadline:
                        raise
                time.sleep(ETCD_RETRY)
        except (etcd.EtcdError, process.LabError) as exc:
            if now - first > self.timing("etcd_timeout"):
                raise kubelet.JoinError(f"error execution phase control-plane-join/etcd: {exc}", retry=False) from None
            raise kubelet.JoinError(f"etcd: {exc}", retry=True) from None

    def _proxy(self, cluster: dict) -> etcdproxy.Forwarder:
        """The API server's pass-through to the cluster's running members (made on first use)."""
        endpoint, state = cluster["endpoint"], cluster["etcd"]
        fwd = self.proxies.get(endpoint)
        if fwd is None:
            fwd = self.proxies[endpoint] = etcdproxy.Forwarder(clusters.slug(endpoint), state.get("proxy_port") or 0)
            if fwd.port != state.get("proxy_port"):
                if state.get("proxy_port"):
                    clusters.stop(self.cfg, endpoint)  # it points at the old port: restarted on the new one
                state["proxy_port"] = fwd.port
        slug = clusters.slug(endpoint)
        fwd.targets = tuple(
            (m["ip"], etcd.CLIENT_PORT) for n, m in state["members"].items() if etcd.running(self.cfg, slug, n)
        )
        return fwd

    def _members(self, cluster: dict, hosts, now: float) -> None:
        """Each member runs while its host is up, as the kubelet runs the static pod; a power-off stops it.

        A member that exits by itself while its host is up (removed from the
        cluster through the etcd API, say) is started again with the kubelet's
        back-off, on its data dir as it is: what etcd makes of that shows.
        """
        slug = clusters.slug(cluster["endpoint"])
        members = cluster.setdefault("etcd", {"proxy_port": 0, "members": {}})["members"]
        with self.lock:
            faulted = set(self.state.get("etcd_stopped") or [])
        for name, m in list(members.items()):
            state = self._member_state(hosts, [m["host"], m["instance"]])
            up = etcd.running(self.cfg, slug, name)
            if state != "gone" and f"{cluster['endpoint']}/{name}" in faulted:
                if up:
                    etcd.stop(self.cfg, slug, name)
                    LOG.info("cluster %s: etcd member %s stopped (lab fault)", cluster["endpoint"], name)
                m["was_running"] = False
                continue
            if state == "gone":
                # deprovisioned or redeployed: the disk is wiped; the member stays in etcd's list until removed
                etcd.stop(self.cfg, slug, name, wipe=True)
                del members[name]
                LOG.info("cluster %s: host of etcd member %s gone; its process and data go", cluster["endpoint"], name)
            elif state == "down":
                if up:
                    etcd.stop(self.cfg, slug, name)
                    LOG.info("cluster %s: etcd member %s stopped (host powered off)", cluster["endpoint"], name)
                m["was_running"] = False
            elif state == "up" and not up:
                if m.get("was_running"):
                    m["exits"] = m.get("exits", 0) + 1
                    m["next_start"] = now + _backoff(m["exits"])
                    m["was_running"] = False
                    LOG.warning(
                        "cluster %s: etcd member %s exited (%d times); restarting in %.0fs: %s",
                        cluster["endpoint"],
                        name,
                        m["exits"],
                        m["next_start"] - now,
                        process.tail(self.cfg, etcd.process_name(slug, name), 3),
                    )
                if now >= m.get("next_start", 0.0):
                    try:
                        self._start_member(cluster, m, now)
                    except Exception as exc:  # noqa: BLE001 - retried after the back-off
                        m["exits"] = m.get("exits", 0) + 1
                        m["next_start"] = now + _backoff(m["exits"])
                        LOG.warning("cluster %s: etcd member %s: %s", cluster["endpoint"], name, exc)
        self._proxy(cluster)

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
            "network": False,  # a new instance has no CNI config until a CNI DaemonSet's Pod runs on it
        }
        entry.update(phase=phase, error=None, node=boot.node_name, cluster=cluster["endpoint"])
        LOG.info("%s: kubeadm %s: Node %s registered at %s", host.key, boot.phase, boot.node_name, cluster["endpoint"])

    # --- API servers and heartbeats ------------------------------------------------------

    def _forget_cluster(self, endpoint: str) -> None:
        self.state["clusters"].pop(endpoint, None)
        self._close_listeners(endpoint)
        fwd = self.proxies.pop(endpoint, None)
        if fwd is not None:
            fwd.close()
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
            self._members(cluster, hosts, time.time())
            cp = [self._member_state(hosts, p) for p in cluster["control_plane"]]
            want = any(s in ("up", "unknown") for s in cp)
            if want and not clusters.running(self.cfg, endpoint):
                try:
                    clusters.start(self.cfg, cluster, self._proxy(cluster).port, wait_ready=False)
                except Exception as exc:  # noqa: BLE001 - retried next round
                    LOG.warning("cluster %s: API server: %s", endpoint, exc)
            elif not want and clusters.running(self.cfg, endpoint):
                LOG.info("cluster %s: no control-plane host up; its API server stops", endpoint)
                clusters.stop(self.cfg, endpoint)
            self._listeners(cluster, hosts)

    def _heartbeats(self, hosts, now: float) -> None:
        with self.lock:
            stopped = set(self.state["kubelet_stopped"])
        renew, report, grace = self.timing("lease_renew"), self.timing("status_report"), self.timing("grace")
        ready: dict[str, bool] = {}
        for key, node in list(self.state["nodes"].items()):
            endpoint = node["endpoint"]
            cluster = self.state["clusters"].get(endpoint)
            if cluster is None or not clusters.running(self.cfg, endpoint):
                continue
            if endpoint not in ready:
                # without etcd quorum every write would hang until it times out: no kubelet gets through then
                ready[endpoint] = clusters.ready(self.cfg, cluster)
            if not ready[endpoint]:
                continue
            if not self._answered(node["host"]):
                continue
            api = clusters.client(self.cfg, cluster)
            try:
                if self._alive(hosts, node) and key not in stopped:
                    fresh_network = not node.get("network") and kubelet.cni_daemonset_for(api, node["name"])
                    if fresh_network:  # a CNI Pod wrote its config on the host: the kubelet reports Ready now
                        LOG.info("Node %s: CNI config from DaemonSet %s: network ready", key, fresh_network)
                        node["network"] = True
                    if fresh_network or node["unknown"] or now - node["last_status"] >= report:
                        kubelet.post_ready(api, node["name"], now, network_ready=bool(node.get("network")))
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


def _backoff(exits: int) -> float:
    return min(BACKOFF_FIRST * 2 ** (exits - 1), BACKOFF_MAX)


def _etcd_address(boot: kubeadm.Bootstrap, ip: str | None, host_key: str) -> str:
    """The address kubeadm gives the host's etcd member: localAPIEndpoint.advertiseAddress, else the host's.

    A host the lab knows no address of (a fake-hardware node without a lab
    port or network_data) gets one of 127.200.0.0-127.254.255.255 derived from
    its key, as a real host always has some interface address.
    """
    import hashlib
    import ipaddress

    addr = boot.advertise_address or ip
    if not addr:
        h = hashlib.sha256(host_key.encode()).digest()
        addr = f"127.{200 + h[0] % 55}.{h[1]}.{1 + h[2] % 254}"
    if not ipaddress.ip_address(addr).is_loopback:
        raise kubeadm.KubeadmError(
            f"kubeadm {boot.phase}: etcd member {boot.node_name} would advertise {addr}; the lab binds 127.0.0.0/8 only"
        )
    return addr
