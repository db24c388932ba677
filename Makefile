# The two commands README.md opens with: `make demo` and `make test`.
# Everything they need is installed by the targets themselves.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST := $(PY) -m pytest

.PHONY: help venv core-venvs awx-collection ee cloud-init test lint sanity unit integration e2e lifecycle resilience molecule demo demo-down check lab-up lab-down lab-status lab-reset bench clean

help:
	@echo "make demo   - bring up the lab and provision a cluster on each provider"
	@echo "make demo-down - deprovision the demo clusters and stop the lab"
	@echo "make test   - lint, sanity, unit and integration tests (starts and stops the lab)"
	@echo "make bench  - benchmarks (not part of make test)"
	@echo "make check  - lint and unit tests (no lab)"
	@echo "make lifecycle | resilience - the day-2 tests alone (make test runs them too, but the faulty-Ironic run)"
	@echo "make lab-up | lab-down | lab-status | lab-reset"

venv: $(VENV)/.installed build/ansible_collections/baremetal/capi

# ansible.cfg's collections_path (and molecule's) find the collection through this link to the work tree.
build/ansible_collections/baremetal/capi:
	mkdir -p build/ansible_collections/baremetal
	ln -sfn ../../.. $@

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip check
	touch $@

test: venv lint sanity unit integration

# The inner loop: lint and the unit tests, no lab.
check: venv lint unit

lint: venv
	$(VENV)/bin/ruff check plugins lab tests bench docs/generate.py extensions
	$(VENV)/bin/ruff format --check plugins lab tests bench docs/generate.py extensions
	$(PY) tests/run_sanity.py --lint
	$(PY) tests/run_sanity.py --docs
	$(VENV)/bin/antsibull-changelog lint

# ansible-test sanity with the project's ansible-core, then with the oldest and the newest tested (the core venvs,
# each on its own Python), one after the other (they share the synced copy); empty ignore files for each.
sanity: venv core-venvs
	$(PY) tests/run_sanity.py --sanity
	for v in $$($(PY) tests/core_venvs.py --list); do .venv-core/$$v/bin/python tests/run_sanity.py --sanity || exit 1; done

unit: venv awx-collection
	$(PYTEST) -p no:cacheprovider tests/unit/store -v -rs
	$(PYTEST) -p no:cacheprovider tests/unit --ignore=tests/unit/store -q -rs --durations=15

# awx.awx from the `ansible` wheel on PyPI (pinned by hash in tests/unit/awx/awx-collection.txt), unpacked alone
# into build/awx-collection: tests/unit/awx validates awx/configure.yml against its modules' argument specs.
AWX_COLLECTION := build/awx-collection/ansible_collections/awx/awx/MANIFEST.json
awx-collection: $(AWX_COLLECTION)
$(AWX_COLLECTION): tests/unit/awx/awx-collection.txt tests/unit/awx/awx_collection.py | $(VENV)/.installed
	$(PY) tests/unit/awx/awx_collection.py

# The AWX execution environment built with podman on a base image made from Debian packages, then smoke-run
# (awx/build-ee.sh, docs/awx.md; needs root, podman, debootstrap). Long: not part of make test.
ee: venv
	awx/build-ee.sh

# cloud-init's own schema validator checks every user data the collection renders (tests/integration/bootstrap):
# Debian's package, installed once (the lab installs its own Debian packages the same way).
cloud-init:
	@command -v cloud-init >/dev/null || { apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends cloud-init; }

# The oldest ansible-core of meta/runtime.yml's requires_ansible (2.16) and the newest tested (tests/core_venvs.py's
# NEWEST, 2.21), a venv each (.venv-core/<x.y>) on a Python that series runs on (3.11; pyenv's 3.12):
# tests/integration/e2e/test_ansible_core_versions.py runs the playbooks with them.
core-venvs: venv
	$(PY) tests/core_venvs.py

integration: venv cloud-init core-venvs
	tests/run_integration.sh

e2e: venv
	$(PYTEST) -p no:cacheprovider tests/integration/e2e tests/integration/awx/test_awx_cluster_jobs.py -q -rs

lifecycle: venv
	$(PYTEST) -p no:cacheprovider tests/integration/lifecycle -q -rs

# kill -9 during provision/deprovision, a faulty Ironic with the -vvv secrets checks, etcd quorum loss, eight
# playbooks racing for five hosts (docs/lab.md)
resilience: venv
	$(PYTEST) -p no:cacheprovider tests/integration/e2e/test_e2e_kill.py tests/integration/e2e/test_e2e_faults_secrets.py \
		tests/integration/kcpsafe/test_quorum_loss_lab.py tests/integration/e2e/test_e2e_race.py -q -rs

molecule: venv
	$(PYTEST) -p no:cacheprovider tests/integration/molecule -q -rs

lab-up: venv
	$(PY) -m lab up

lab-down: venv
	$(PY) -m lab down

lab-status: venv
	$(PY) -m lab status

lab-reset: venv
	$(PY) -m lab reset

demo: venv
	$(PY) -m lab.demo

# The demo's tear-down (README): both clusters deprovisioned and their hosts deregistered, then the lab stopped by
# PID, whatever the deprovision said (its rc is the target's).
demo-down: venv
	rc=0; $(PY) -m lab.demo --down || rc=$$?; $(PY) -m lab down || rc=$$((rc ? rc : 1)); exit $$rc

# One table, ours / floor / ratio (bench/table.py; needs `python -m lab up`). The bench_*.py scripts run alone.
bench: venv
	nice -n 10 $(PY) bench/table.py --fleet 200

clean:
	rm -rf build tests/output .pytest_cache .ruff_cache
