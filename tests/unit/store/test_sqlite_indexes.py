"""The sqlite store answers host choice's filters from its indexes (issue 15: host choice among 10,000 hosts)."""

from __future__ import annotations

import sqlite3

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, selectors
from ansible_collections.baremetal.capi.plugins.module_utils.store import common
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore


def plan(store, kind, ns, selector, fields) -> str:
    sql, args, _sel = store._query("namespace, name", kind, ns, selectors.parse(selector), fields)
    return " | ".join(row[3] for row in store._con().execute("EXPLAIN QUERY PLAN " + sql, args))


def test_the_free_host_filters_search_the_free_hosts_index(tmp_path):
    store = SqliteStore(str(tmp_path / "state.db"))
    for i in range(20):
        store.create(meta.new("BareMetalHost", f"h{i}", "default", spec={}, labels={"pool": "gold"}))
    got = plan(store, "BareMetalHost", "default", "pool=gold,!infrastructure.cluster.x-k8s.io/node-reuse",
               common.FREE_HOST_FIELDS)  # fmt: skip
    # every filter is an equality on a column of the index: no host's JSON is read to filter it
    assert "SEARCH objects USING INDEX objects_free_hosts (namespace=?" + " AND <expr>=?" * 7 + ")" in got
    # across namespaces, or with other filters, the other indexes serve as before
    assert "objects_free_hosts" not in plan(store, "BareMetalHost", None, None, common.FREE_HOST_FIELDS)
    got = plan(store, "BareMetalHost", "default", None, {common.CONSUMER_NAME: "m1"})
    assert "USING INDEX objects_consumer" in got
    assert "objects_free_hosts" not in plan(store, "ConfigMap", "default", None, None)
    store.close()


def test_a_store_file_from_before_the_index_gets_it_when_opened(tmp_path):
    path = str(tmp_path / "state.db")
    SqliteStore(path).close()
    con = sqlite3.connect(path)
    con.execute("DROP INDEX objects_free_hosts")
    con.commit()
    con.close()
    store = SqliteStore(path)
    names = {r[0] for r in store._con().execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "objects_free_hosts" in names
    store.close()
