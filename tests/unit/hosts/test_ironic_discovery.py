"""The ironic driver's per-thread connections share one version discovery: threads that open their connection
at the same time wait for the first one's answer instead of each asking Ironic (GET / and GET /v1/)."""

from __future__ import annotations

import threading
import time

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import driver as ironic_driver


def test_concurrent_connections_discover_one_at_a_time(monkeypatch):
    asked: list[int] = []
    running, peak = [0], [0]
    guard = threading.Lock()

    def fake_discover(c):
        # what keystoneauth does: ask Ironic only when the shared cache has no answer yet
        with guard:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        cache = c.config._discovery_cache
        if "answer" not in cache:
            time.sleep(0.05)  # the request in flight, while the other threads arrive
            asked.append(threading.get_ident())
            cache["answer"] = True
        with guard:
            running[0] -= 1

    monkeypatch.setattr(ironic_driver, "_discover", fake_discover)
    drv = ironic_driver.IronicDriver(ironic_url="http://ironic.invalid:6385")
    start = threading.Barrier(8)
    conns: list = []

    def worker():
        start.wait()
        conns.append(drv.conn())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(conns) == 8 and len({id(c) for c in conns}) == 8  # still one connection per thread
        assert peak[0] == 1
        assert len(asked) == 1
    finally:
        drv.close()
