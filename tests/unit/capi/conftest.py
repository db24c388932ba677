"""The Cluster API core tests: a sqlite store (tests/conftest.py), no lab (the workload API tests are in
tests/integration/workload)."""
