#!/usr/bin/env bash
# make integration: the lab up once (fast simulator timings), the store and module suites against the
# real kube-apiserver, then the integration tests in four lines at once - the tests that use the lab's
# Redfish BMCs (they share 12 emulated hosts, so they run one after another), everything else followed
# by the end-to-end flows, and two lines of day-2 flows - and the lab down by PID at the end, whatever happened.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=tests/output/integration
mkdir -p "$OUT"

# Node lifecycle and MAAS transitions in seconds, not minutes (the tests set the same; see their conftests).
export BMCAPI_NODESIM_TIMINGS=${BMCAPI_NODESIM_TIMINGS:-'{"grace": 4, "lease_renew": 1, "status_report": 30, "poll": 1}'}
export BMCAPI_MAAS_TIMINGS=${BMCAPI_MAAS_TIMINGS:-'{"deploy": 1, "release": 0.3, "erase": 0.3, "commission": 0.3, "power": 0.1}'}

started=0
cleanup() {
    if [ "$started" = 1 ] && [ "${BMCAPI_KEEP_LAB:-0}" != 1 ]; then
        "$PY" -m lab down || true
    fi
}
trap cleanup EXIT

if ! "$PY" -m lab status >/dev/null 2>&1; then
    started=1
fi
"$PY" -m lab up || exit 1
"$PY" -m lab status || exit 1
# kubeadm from the lab's k8s.io/kubernetes module (cached after the first build): tests/integration/bootstrap
# validates every kubeadm configuration the collection renders with it.
"$PY" -m lab.kube_build.build --kubeadm >/dev/null || exit 1

rc=0
# the store contract and module suites of tests/unit again, on the kubernetes store
"$PY" -m pytest -p no:cacheprovider tests/integration/stores -q -rs || rc=1

REDFISH=(tests/integration/hosts tests/integration/lab_ironic tests/integration/metal3_machine
         tests/integration/remediation tests/integration/nodesim/test_ironic_redfish.py)
# The user's whole flows: provision/scale/deprovision_cluster.yml end to end, make demo, the AWX cluster job
# templates through ansible-runner, the molecule scenarios. They run after the other tests, beside the
# Redfish group (fake-hardware hosts and the MAAS simulator only).
# tests/integration/e2e includes the playbooks on the oldest and the newest declared ansible-core (.venv-core/,
# `make core-venvs`).
# The agent path: a real ironic-python-agent inspects, cleans and deploys Redfish hosts (minutes per host on two
# cores). It shares the 12 emulated hosts with the Redfish group, so it runs after it, on that line.
AGENT=(tests/integration/agent)
# the agent group runs on three lines side by side (their files use different hosts, and most of their time is
# spent waiting on them): the cluster (host-09..11) then the IPMI host (host-13); the host features (host-03/04)
# then firmware and RAID (host-06); the rest (test_agent_hosts.py: host-01/02, host-12)
AGENT_LINE1=(tests/integration/agent/test_agent_cluster.py tests/integration/agent/test_agent_ipmi.py)
AGENT_LINE2=(tests/integration/agent/test_agent_host_features.py tests/integration/agent/test_agent_raid.py)
E2E=(tests/integration/e2e tests/integration/lifecycle/test_etcd_client.py
     tests/integration/lifecycle/test_kcp_etcd_members.py tests/integration/awx/test_awx_cluster_jobs.py
     tests/integration/molecule)
# The playbooks on the oldest and newest ansible-core and the --check plans (fake-hardware hosts and the MAAS
# simulator) run in the Redfish line after its tests, so that the two lines end about together.
E2E_LATE=(tests/integration/e2e/test_ansible_core_versions.py tests/integration/e2e/test_plan.py)
# Day 2, on two more lines beside the others (most of their time is spent waiting on the cluster): the Metal3
# control-plane upgrade of a 3 + 2 cluster (order, etcd members, the workload API probed every second), scale
# 3 -> 1 -> 3, a maxSurge 0 upgrade and an upgrade killed at five points, the etcd quorum-loss refusal, then the
# MAAS upgrade of a 3 + 2 cluster (its endpoint a MAAS DNS name) and a killed one, on one; kill -9 at four points
# of a provision and of a deprovision, then eight playbooks racing for five hosts on the other. Outside
# (`make resilience`): the faulty-Ironic run with the -vvv secrets checks.
DAY2_LINE1=(tests/integration/lifecycle/test_upgrade_metal3.py tests/integration/kcpsafe/test_quorum_loss_lab.py
            tests/integration/lifecycle/test_upgrade_maas.py)
DAY2_LINE2=(tests/integration/e2e/test_e2e_kill.py tests/integration/e2e/test_e2e_race.py)
RESILIENCE=(tests/integration/e2e/test_e2e_faults_secrets.py "${DAY2_LINE1[@]}" "${DAY2_LINE2[@]}")
E2E_LATE_IGNORE=()
for path in "${E2E_LATE[@]}" "${RESILIENCE[@]}"; do E2E_LATE_IGNORE+=(--ignore="$path"); done
IGNORE=()
for path in "${REDFISH[@]}" "${AGENT[@]}" "${E2E[@]}"; do IGNORE+=(--ignore="$path"); done
IGNORE+=(--ignore=tests/integration/lifecycle --ignore=tests/integration/stores --ignore=tests/integration/kcpsafe/test_quorum_loss_lab.py)

(
    "$PY" -m pytest -p no:cacheprovider "${REDFISH[@]}" "${E2E_LATE[@]}" -q -rs --durations=15 >"$OUT/redfish.log" 2>&1
    rc_r=$?
    "$PY" -m pytest -p no:cacheprovider "${AGENT_LINE1[@]}" -q -rs --durations=15 >"$OUT/agent-1.log" 2>&1 &
    agent_1=$!
    "$PY" -m pytest -p no:cacheprovider "${AGENT_LINE2[@]}" -q -rs --durations=15 >"$OUT/agent-2.log" 2>&1 &
    agent_2=$!
    agent_ignore=()
    for path in "${AGENT_LINE1[@]}" "${AGENT_LINE2[@]}"; do agent_ignore+=(--ignore="$path"); done
    "$PY" -m pytest -p no:cacheprovider "${AGENT[@]}" "${agent_ignore[@]}" -q -rs --durations=15 \
        >"$OUT/agent.log" 2>&1
    rc_a=$?
    wait "$agent_2" || rc_a=1
    wait "$agent_1" && [ "$rc_a" = 0 ] || exit 1
    exit "$rc_r"
) &
redfish=$!
(
    "$PY" -m pytest -p no:cacheprovider tests/integration "${IGNORE[@]}" -q -rs --durations=15 >"$OUT/other.log" 2>&1
    rc_o=$?
    "$PY" -m pytest -p no:cacheprovider "${E2E[@]}" "${E2E_LATE_IGNORE[@]}" -q -rs --durations=15 \
        >"$OUT/e2e.log" 2>&1 || exit 1
    exit "$rc_o"
) &
other=$!
(
    "$PY" -m pytest -p no:cacheprovider "${DAY2_LINE1[@]}" -q -rs --durations=15 >"$OUT/day2-1.log" 2>&1
) &
day2_1=$!
(
    "$PY" -m pytest -p no:cacheprovider "${DAY2_LINE2[@]}" -q -rs --durations=15 >"$OUT/day2-2.log" 2>&1
) &
day2_2=$!
wait "$redfish"; rc_redfish=$?
wait "$other"; rc_other=$?
wait "$day2_1"; rc_day2_1=$?
wait "$day2_2"; rc_day2_2=$?

echo "=== integration: tests without the Redfish BMCs"
cat "$OUT/other.log"
echo "=== integration: end to end (playbooks, demo, AWX cluster jobs, molecule)"
cat "$OUT/e2e.log"
echo "=== integration: tests on the Redfish BMCs, then the playbooks on the oldest and newest ansible-core"
cat "$OUT/redfish.log"
echo "=== integration: the agent path (ironic-python-agent on Redfish hosts)"
cat "$OUT/agent-1.log" "$OUT/agent-2.log" "$OUT/agent.log"
echo "=== integration: day 2 (Metal3 upgrade, scale 3 -> 1 -> 3, killed upgrade; etcd quorum loss; MAAS upgrade)"
cat "$OUT/day2-1.log"
echo "=== integration: day 2 (kill -9 of a provision and a deprovision; racing playbooks)"
cat "$OUT/day2-2.log"
for r in "$rc_redfish" "$rc_other" "$rc_day2_1" "$rc_day2_2"; do [ "$r" = 0 ] || rc=1; done
exit "$rc"
