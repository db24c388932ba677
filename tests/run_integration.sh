#!/usr/bin/env bash
# make integration: the lab up once (fast simulator timings), the store and module suites against the
# real kube-apiserver, then the integration tests in two groups at once - the tests that use the lab's
# Redfish BMCs (they share 12 emulated hosts, so they run one after another) and everything else -
# and the lab down by PID at the end, whatever happened.
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

rc=0
BMCAPI_STORES=kubernetes "$PY" -m pytest -p no:cacheprovider tests/unit/store -v -rs || rc=1
BMCAPI_STORES=kubernetes "$PY" -m pytest -p no:cacheprovider tests/unit/modules -q -rs || rc=1

REDFISH=(tests/integration/hosts tests/integration/lab_ironic tests/integration/metal3_machine
         tests/integration/remediation tests/integration/nodesim/test_ironic_redfish.py)
# The end-to-end playbook runs (e2e, the AWX cluster job templates through ansible-runner, molecule) run with
# `make e2e`: they are not yet green together (see the open issue "provision_cluster.yml end to end").
IGNORE=(--ignore=tests/integration/molecule --ignore=tests/integration/e2e
        --ignore=tests/integration/awx/test_awx_cluster_jobs.py)
for path in "${REDFISH[@]}"; do IGNORE+=(--ignore="$path"); done

"$PY" -m pytest -p no:cacheprovider "${REDFISH[@]}" -q -rs --durations=15 >"$OUT/redfish.log" 2>&1 &
redfish=$!
"$PY" -m pytest -p no:cacheprovider tests/integration "${IGNORE[@]}" -q -rs --durations=15 >"$OUT/other.log" 2>&1 &
other=$!
wait "$redfish"; rc_redfish=$?
wait "$other"; rc_other=$?

echo "=== integration: tests without the Redfish BMCs"
cat "$OUT/other.log"
echo "=== integration: tests on the Redfish BMCs"
cat "$OUT/redfish.log"
[ "$rc_redfish" = 0 ] && [ "$rc_other" = 0 ] || rc=1
exit "$rc"
