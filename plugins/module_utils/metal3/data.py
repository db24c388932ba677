"""Metal3 data: template -> claim -> index -> Metal3Data -> IP claims -> the two Secrets.

The three CAPM3 controllers this plays (C:baremetal/metal3datatemplate_manager.go,
metal3data_manager.go, and the Metal3Machine side of metal3machine_manager.go):

* the Metal3Machine asks with a Metal3DataClaim named after itself;
* the template gives the claim the lowest free index and creates the
  Metal3Data ``<template>-<index>`` (the Metal3Data name is the lock: a racing
  process gets AlreadyExists and takes the next index);
* the Metal3Data claims an address from every referenced pool (IPClaim
  ``<m3data>-<pool>``, or a CAPI IPAddressClaim for other providers' pools),
  renders metaData / networkData and creates ``<m3m>-metadata`` /
  ``<m3m>-networkdata``, never rewriting a Secret that exists.

Everything the render needs is checked (a dry render with the addresses that
would be taken) before the first write, so bad input leaves nothing behind.
"""

from __future__ import annotations

import base64

try:
    import yaml
except ImportError:  # PyYAML comes with ansible-core; the modules report it missing otherwise
    yaml = None

from ansible_collections.baremetal.capi.plugins.module_utils.errors import AlreadyExists, Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import data_webhooks, render
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data_addresses import AddressesMixin
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data_addresses import get as _get
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data_addresses import update as _update
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM, AllocationFailed
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, convert, kinds, meta, names

SECRET_TYPE = "infrastructure.cluster.x-k8s.io/secret"
METADATA_SUFFIX, NETWORKDATA_SUFFIX = "-metadata", "-networkdata"
_PLACEHOLDER = {"address": "", "prefix": 0, "gateway": "", "dnsServers": []}


def _ref(obj: dict) -> dict:
    return {"name": meta.name(obj), "namespace": meta.namespace(obj)}


def secret_payload(secret: dict, key: str):
    raw = (secret.get("data") or {}).get(key)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(base64.b64decode(raw).decode(), Loader=loader) if raw else None  # noqa: S506 (a safe loader)


class DataManager(AddressesMixin):
    def __init__(
        self,
        store,
        ipam: IPAM | None = None,
        bmh_name_based_preallocation: bool = False,
        update_machine_status: bool = False,
    ):
        self.store = store
        self.ipam = ipam or IPAM(store)
        # The Metal3Machine's status (renderedData, metaData, networkData) is the machine flow's to write; the
        # metal3_data module, run on its own, asks for it here.
        self.update_machine_status = update_machine_status
        # CAPM3's --enable-bmh-name-based-preallocation: IPClaims named <bmh>-<pool>, so that a pool's
        # preAllocations can give a host the same address again (the e2e "ip-reuse" case)
        self.bmh_names = bmh_name_based_preallocation

    # -- templates -----------------------------------------------------------------

    def apply_template(self, obj: dict, check: bool = False) -> tuple[bool, dict, list]:
        obj = data_webhooks.default_template(convert.to_current(obj))
        obj["metadata"].setdefault("namespace", "default")
        old = _get(self.store, "Metal3DataTemplate", meta.name(obj), meta.namespace(obj))
        warnings = data_webhooks.validate_template(obj, old)
        if old is None:
            return True, obj if check else self.store.create(obj), warnings
        new = meta.deepcopy(old)
        new["spec"] = obj["spec"]
        for key in ("labels", "annotations"):
            if obj["metadata"].get(key):
                new["metadata"].setdefault(key, {}).update(obj["metadata"][key])
        if new["spec"] == old["spec"] and new["metadata"] == old["metadata"]:
            return False, old, warnings
        return True, new if check else self.store.update(new), warnings

    def delete_template(self, name: str, ns: str, check: bool = False) -> bool:
        """Delete a template and release its finalizer; refused while a Metal3Data or Metal3DataClaim of it exists.

        CAPM3's reconcileDelete counts the claims that still exist (UpdateDatas), not ``status.indexes``: an
        index left by a run killed between its writes must not keep the template deleting forever.
        """
        template = _get(self.store, "Metal3DataTemplate", name, ns)
        if template is None:
            return False
        used = [
            f"{kind} {meta.name(d)}"
            for kind in ("Metal3Data", "Metal3DataClaim")
            for d in self.store.list(kind, ns)
            if (d.get("spec") or {}).get("template", {}).get("name") == name
        ]
        if used:
            raise Invalid(
                f"still in use by {', '.join(sorted(used)[:5])}: delete those machines' data first",
                obj=meta.ref(template),
                field="metadata.finalizers",
            )
        if check:
            return True
        if self.store.delete("Metal3DataTemplate", name, ns) is not None:
            _update(
                self.store,
                "Metal3DataTemplate",
                name,
                ns,
                lambda t: meta.remove_finalizer(t, names.METAL3_DATA_TEMPLATE_FINALIZER),
            )
        return True

    # -- what a render reads -------------------------------------------------------------

    def context(self, m3m: dict) -> tuple[dict, dict, dict]:
        """The template, owner Machine and BareMetalHost of a Metal3Machine."""
        where, ns = meta.ref(m3m), meta.namespace(m3m)
        tref = (m3m.get("spec") or {}).get("dataTemplate") or {}
        if not tref.get("name"):
            raise Invalid("no data template", obj=where, field="spec.dataTemplate.name")
        if tref.get("namespace") not in (None, "", ns):
            raise Invalid(
                "the data template must be in the Metal3Machine's namespace",
                obj=where,
                field="spec.dataTemplate.namespace",
            )
        template = _get(self.store, "Metal3DataTemplate", tref["name"], ns)
        if template is None:
            raise Invalid(f'Metal3DataTemplate "{tref["name"]}" not found', obj=where, field="spec.dataTemplate.name")
        owners = [
            r for r in meta.owners_of_kind(m3m, "Machine") if r.get("apiVersion", "").startswith(kinds.CAPI_GROUP + "/")
        ]
        machine = _get(self.store, "Machine", owners[0]["name"], ns) if owners else None
        if machine is None:
            raise Invalid(
                "Waiting for Machine Controller to set OwnerRef on Metal3Machine",
                obj=where,
                field="metadata.ownerReferences",
            )
        host = meta.annotations(m3m).get(names.HOST_ANNOTATION, "")
        bmh = _get(self.store, "BareMetalHost", host.split("/")[-1], ns) if host else None
        if bmh is None:
            raise Invalid(
                f"no BareMetalHost {host!r} associated",
                obj=where,
                field=f"metadata.annotations[{names.HOST_ANNOTATION}]",
            )
        return template, machine, bmh

    # -- the flow ----------------------------------------------------------------------------

    def reconcile(self, name: str, ns: str, check: bool = False) -> dict:
        """Drive a Metal3Machine's data to ready.  In check mode write nothing and say what would happen."""
        m3m = _get(self.store, "Metal3Machine", name, ns)
        if m3m is None:
            raise Invalid(f'Metal3Machine "{name}" not found', obj=f"Metal3Machine {ns}/{name}")
        template, machine, bmh = self.context(m3m)
        objects = {"metal3machine": m3m, "machine": machine, "baremetalhost": bmh}
        pools = render.referenced_pools(template, objects)
        pool_objs = {
            p: self.ipam.get_pool(p, ns, meta.ref(template), ref["field"])
            for p, ref in pools.items()
            if render.is_metal3_pool(ref)
        }
        claim = _get(self.store, "Metal3DataClaim", name, ns)
        data = self._data_of(claim)
        spec = template["spec"]
        wanted = {
            k: f"{name}{s}"
            for k, s in (("metaData", METADATA_SUFFIX), ("networkData", NETWORKDATA_SUFFIX))
            if spec.get(k) is not None
        }
        existing = {k: _get(self.store, "Secret", n, ns) for k, n in wanted.items()}
        result = {"changed": False, "secrets": wanted, "metaData": None, "networkData": None}
        if data is not None and (data.get("status") or {}).get("ready") and all(existing.values()):
            if self.update_machine_status and not check and (m3m.get("status") or {}).get("renderedData") != _ref(data):
                self._m3m_status(m3m, data, wanted)
                result["changed"] = True
            return self._result(
                result, claim, data, existing, self._answers(data, pools, pool_objs, False, meta.name(bmh))
            )
        index = (data or {}).get("spec", {}).get("index")
        if index is None:
            index = self._lowest_free(template)
        plan = data or meta.new("Metal3Data", f"{meta.name(template)}-{index}", ns, spec={"index": index})
        answers = self._answers(plan, pools, pool_objs, True, meta.name(bmh))
        ctx = render.RenderContext(
            template, plan, m3m, machine, bmh, {p: a or _PLACEHOLDER for p, a in answers.items()}
        )
        rendered = {"metaData": render.render_meta_data(ctx), "networkData": render.render_network_data(ctx)}
        if check:
            result.update(changed=True, index=index, data=meta.name(plan), addresses=answers)
            for key in wanted:
                result[key] = secret_payload(existing[key], key) if existing[key] else rendered[key]
            return result
        claim = self._ensure_claim(m3m, template, claim)
        data = self._ensure_data(template, claim, m3m)
        try:
            answers = self._claim_addresses(data, pools, pool_objs, meta.name(bmh))
        except AllocationFailed as exc:
            msg = f"IP Allocation for {exc.pool} failed : {exc.message}"
            self._set_data_status(data, False, msg)
            raise AllocationFailed(msg, obj=meta.ref(data), field="status.errorMessage") from exc
        ctx = render.RenderContext(template, data, m3m, machine, bmh, answers)
        written = {}
        for key, secret_name in wanted.items():
            if existing[key] is None:
                payload = render.render_meta_data(ctx) if key == "metaData" else render.render_network_data(ctx)
                existing[key], created = self._create_secret(secret_name, ns, key, payload, data, machine)
                if created:
                    written[key] = payload
        data = _update(self.store, "Metal3Data", meta.name(data), ns, lambda d: self._set_refs(d, wanted))
        data = self._set_data_status(data, True, None)
        if self.update_machine_status:
            self._m3m_status(m3m, data, wanted)
        result["changed"] = True
        return self._result(result, claim, data, existing, answers, written)

    def _m3m_status(self, m3m: dict, data: dict | None, wanted: dict) -> None:
        """The Metal3Machine side (WaitForM3Metadata / DissociateM3Metadata): renderedData and the Secrets.

        A user's own spec.metaData / spec.networkData (already in status) wins over the rendered ones.
        """
        ns = meta.namespace(m3m)

        def change(m):
            status = m.setdefault("status", {})
            before = meta.deepcopy(status)
            for key, secret_name in wanted.items():
                ours = {"name": secret_name, "namespace": ns}
                if data is not None and not status.get(key):
                    status[key] = ours
                elif data is None and status.get(key) == ours:
                    status.pop(key)
            if data is not None:
                status["renderedData"] = _ref(data)
            else:
                status.pop("renderedData", None)
            return status != before

        _update(self.store, "Metal3Machine", meta.name(m3m), ns, change, status=True)

    def _result(self, result, claim, data, secrets, answers, written=None) -> dict:
        result.update(claim=claim, data=meta.name(data), index=data["spec"]["index"], addresses=answers)
        for key, secret in secrets.items():
            result[key] = (written or {}).get(key) or secret_payload(secret, key)
        return result

    def _data_of(self, claim: dict | None) -> dict | None:
        ref = ((claim or {}).get("status") or {}).get("renderedData") or {}
        data = _get(self.store, "Metal3Data", ref["name"], meta.namespace(claim)) if ref.get("name") else None
        return data if data and data["spec"].get("claim", {}).get("name") == meta.name(claim) else None

    @staticmethod
    def _set_refs(data: dict, wanted: dict) -> bool:
        before = meta.deepcopy(data["spec"])
        for key, secret_name in wanted.items():
            data["spec"][key] = {"name": secret_name, "namespace": meta.namespace(data)}
        return data["spec"] != before

    def _set_data_status(self, data: dict, ready: bool, error: str | None) -> dict:
        def change(d):
            status = dict(d.get("status") or {})
            status["ready"] = ready
            status.pop("errorMessage", None)
            if error:
                status["errorMessage"] = error
            changed = status != (d.get("status") or {})
            d["status"] = status
            return changed

        return _update(self.store, "Metal3Data", meta.name(data), meta.namespace(data), change, status=True)

    def _create_secret(self, name, ns, key, payload, data, machine) -> dict:
        secret = meta.new(
            "Secret",
            name,
            ns,
            labels={names.CLUSTER_NAME_LABEL: (machine.get("spec") or {}).get("clusterName", "")}
            if (machine.get("spec") or {}).get("clusterName")
            else None,
        )
        secret["type"] = SECRET_TYPE
        secret["metadata"]["ownerReferences"] = [meta.owner_reference(data, controller=True)]
        secret["stringData"] = {key: render.to_yaml(payload)}
        try:
            return self.store.create(secret), True
        except AlreadyExists:
            return self.store.get("Secret", name, ns), False  # CAPM3: never rewritten once it exists

    # -- claim and index ------------------------------------------------------------------------

    def _ensure_claim(self, m3m: dict, template: dict, claim: dict | None) -> dict:
        ns = meta.namespace(m3m)
        if claim is None:
            claim = meta.new(
                "Metal3DataClaim",
                meta.name(m3m),
                ns,
                spec={"template": _ref(template)},
                labels=dict(meta.labels(m3m)) or None,
                finalizers=[names.METAL3_MACHINE_FINALIZER],
            )
            claim["metadata"]["ownerReferences"] = [meta.owner_reference(m3m, controller=True)]
            data_webhooks.validate_claim(claim)
            try:
                claim = self.store.create(claim)
            except AlreadyExists:
                claim = self.store.get("Metal3DataClaim", meta.name(m3m), ns)
        return _update(
            self.store,
            "Metal3DataClaim",
            meta.name(claim),
            ns,
            lambda c: meta.add_finalizer(c, names.METAL3_DATA_CLAIM_FINALIZER),
        )

    @staticmethod
    def _indexes(template: dict) -> list:
        return list((template.get("status") or {}).get("indexes") or [])

    def _lowest_free(self, template: dict, skip=()) -> int:
        """The lowest integer in [0, n) not used, or n (n = entries in status.indexes)."""
        used = {e["index"] for e in self._indexes(template)} | set(skip)
        idx = 0
        while idx in used:
            idx += 1
        return idx

    def _ensure_data(self, template: dict, claim: dict, m3m: dict) -> dict:
        ns, tname, cname = meta.namespace(claim), meta.name(template), meta.name(claim)
        template = _update(
            self.store,
            "Metal3DataTemplate",
            tname,
            ns,
            lambda t: meta.add_finalizer(t, names.METAL3_DATA_TEMPLATE_FINALIZER),
        )
        data = self._data_of(claim)
        known = [e["index"] for e in self._indexes(template) if e["name"] == cname]
        if data is None and known:
            data = _get(self.store, "Metal3Data", f"{tname}-{known[0]}", ns)
            if data is not None and data["spec"].get("claim", {}).get("name") != cname:
                data = None
        taken: set = set()
        while data is None:
            idx = self._lowest_free(template, taken)
            obj = meta.new(
                "Metal3Data",
                f"{tname}-{idx}",
                ns,
                labels=dict(meta.labels(claim)) or None,
                finalizers=[names.METAL3_DATA_CLAIM_FINALIZER, names.METAL3_DATA_FINALIZER],
                spec={"index": idx, "template": _ref(template), "claim": _ref(claim)},
            )
            obj["metadata"]["ownerReferences"] = [
                meta.owner_reference(claim, controller=True),
                meta.owner_reference(m3m),
            ]
            data_webhooks.validate_data(obj)
            try:
                data = self.store.create(obj)
            except AlreadyExists:
                other = self.store.get("Metal3Data", obj["metadata"]["name"], ns)
                if other["spec"].get("claim", {}).get("name") == cname and not meta.is_deleting(other):
                    data = other
                taken.add(idx)

        def add_index(t):
            entries = [e for e in self._indexes(t) if e["name"] != cname]
            entries.append({"name": cname, "index": data["spec"]["index"]})
            entries.sort(key=lambda e: e["index"])
            if entries == self._indexes(t):
                return False
            t.setdefault("status", {})["indexes"] = entries
            t["status"]["lastUpdated"] = conditions.now_rfc3339()
            return True

        _update(self.store, "Metal3DataTemplate", tname, ns, add_index, status=True)

        def rendered(c):
            if (c.get("status") or {}).get("renderedData") == _ref(data):
                return False
            c.setdefault("status", {})["renderedData"] = _ref(data)
            c["status"].pop("errorMessage", None)
            return True

        _update(self.store, "Metal3DataClaim", cname, ns, rendered, status=True)
        return data

    # -- delete -----------------------------------------------------------------------------------

    def delete(self, name: str, ns: str, check: bool = False) -> dict:
        """Release a Metal3Machine's data: claim, index, Metal3Data, addresses (Secrets go with the Metal3Data)."""
        claim = _get(self.store, "Metal3DataClaim", name, ns)
        if claim is None:
            return {"changed": False}
        data = self._data_of(claim)
        result = {"changed": True, "claim": name, "data": meta.name(data) if data else None}
        if check:
            return result
        m3m = _get(self.store, "Metal3Machine", name, ns)
        if m3m is not None and self.update_machine_status:
            secrets = {"metaData": name + METADATA_SUFFIX, "networkData": name + NETWORKDATA_SUFFIX}
            self._m3m_status(m3m, None, secrets)
        _update(
            self.store, "Metal3DataClaim", name, ns, lambda c: meta.remove_finalizer(c, names.METAL3_MACHINE_FINALIZER)
        )
        if _get(self.store, "Metal3DataClaim", name, ns):
            self.store.delete("Metal3DataClaim", name, ns)
        if data is not None:
            self._release(data)
        tname = claim["spec"]["template"]["name"]
        if _get(self.store, "Metal3DataTemplate", tname, ns):

            def drop_index(t):
                entries = [e for e in self._indexes(t) if e["name"] != name]
                if entries == self._indexes(t):
                    return False
                t["status"]["indexes"] = entries
                return True

            _update(self.store, "Metal3DataTemplate", tname, ns, drop_index, status=True)
        if _get(self.store, "Metal3DataClaim", name, ns):
            _update(
                self.store,
                "Metal3DataClaim",
                name,
                ns,
                lambda c: meta.remove_finalizer(c, names.METAL3_DATA_CLAIM_FINALIZER),
            )
        return result
