"""The modules through ansible-playbook (localhost, sqlite store): idempotence and check mode end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from m3_objects import example_docs

REPO = Path(__file__).resolve().parents[3]
NS = "metal3"


def play(tmp_path, db, tasks, check=False):
    for i, task in enumerate(tasks):
        task.setdefault("register", f"r{i}")
    names = [t["register"] for t in tasks]
    results = tmp_path / "results.json"
    book = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "module_defaults": {"group/baremetal.capi.capi": {"store": {"path": db, "namespace": NS}}},
            "tasks": tasks
            + [
                {
                    "ansible.builtin.copy": {
                        "content": "{{ [" + ", ".join(names) + "] | to_json }}",
                        "dest": str(results),
                    },
                    "check_mode": False,
                }
            ],
        }
    ]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(book, sort_keys=False))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
    )
    argv = [
        str(Path(sys.executable).with_name("ansible-playbook")),
        str(path),
        "-e",
        json.dumps({"ansible_python_interpreter": sys.executable}),
    ]
    proc = subprocess.run(argv + (["--check"] if check else []), env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    return json.loads(results.read_text())


def setup_tasks():
    docs = example_docs()
    out = [{"baremetal.capi.ippool": {"name": p["metadata"]["name"], "spec": p["spec"]}} for p in docs[1:]]
    out.append({"baremetal.capi.metal3_data_template": {"name": "nodepool-1", "spec": docs[0]["spec"]}})
    out += [
        {"baremetal.capi.object": {"kind": "Machine", "name": "mach-0", "spec": {"clusterName": "test1"}}},
        {
            "baremetal.capi.object": {
                "kind": "BareMetalHost",
                "name": "node-1",
                "spec": {"bootMACAddress": "52:54:00:aa:bb:01"},
                "annotations": {"example.com/ext-mac": "52:54:00:aa:bb:04"},
                "status": {
                    "hardware": {
                        "nics": [
                            {"name": "enp1s0", "mac": "52:54:00:aa:bb:01"},
                            {"name": "enp2s0", "mac": "52:54:00:aa:bb:02"},
                        ]
                    }
                },
            }
        },
        {"baremetal.capi.object_info": {"kind": "Machine", "name": "mach-0"}, "register": "machine"},
        {
            "baremetal.capi.object": {
                "kind": "Metal3Machine",
                "name": "m3m-0",
                "spec": {
                    "dataTemplate": {"name": "nodepool-1"},
                    "image": {"url": "http://127.0.0.1/img.qcow2", "checksum": "abc", "checksumType": "sha256"},
                },
                "annotations": {"metal3.io/BareMetalHost": "metal3/node-1"},
                "definition": {
                    "metadata": {
                        "ownerReferences": [
                            {
                                "apiVersion": "cluster.x-k8s.io/v1beta2",
                                "kind": "Machine",
                                "name": "mach-0",
                                "controller": True,
                                "uid": "{{ machine.objects[0].metadata.uid }}",
                            }
                        ]
                    }
                },
            }
        },
    ]
    return out


def work_tasks():
    return [
        {"baremetal.capi.metal3_data": {"metal3machine": "m3m-0"}},
        {"baremetal.capi.ipclaim": {"name": "vip", "pool": "baremetalv4-pool"}},
        {"baremetal.capi.ippool_info": {"name": "baremetalv4-pool"}},
    ]


def test_playbook_converges_and_check_mode_writes_nothing(tmp_path):
    db = str(tmp_path / "state.db")
    assert all(r["changed"] for i, r in enumerate(play(tmp_path, db, setup_tasks())) if i != 6)
    preview = play(tmp_path, db, work_tasks(), check=True)
    assert preview[0]["changed"] and preview[1]["changed"]
    assert preview[2]["pools"][0]["allocations"] == {}  # check mode wrote nothing
    first = play(tmp_path, db, work_tasks())
    data = first[0]
    assert data["changed"] and data["data"] == "nodepool-1-0"
    assert (data["meta_data"], data["network_data"]) == (preview[0]["meta_data"], preview[0]["network_data"])
    assert data["meta_data"]["provisioningIP"] == "172.22.0.50"
    assert data["network_data"]["networks"][1]["ip_address"] == "192.168.111.20"
    assert preview[1]["address"] == "192.168.111.20" and first[1]["address"] == "192.168.111.21"
    assert first[2]["pools"][0]["allocations"] == {
        "nodepool-1-0-baremetalv4-pool": "192.168.111.20",
        "vip": "192.168.111.21",
    }
    again = play(tmp_path, db, setup_tasks() + work_tasks())
    changed = [i for i, r in enumerate(again) if r.get("changed")]
    assert changed == [], [again[i] for i in changed]
