"""The execution environment installs what the tests run with, within bounds that keep its builds reproducible.

Every Python requirement of the EE (awx/execution-environment.yml's ansible_core and ansible_runner, and
meta/ee-requirements.txt, which test_galaxy_build.py keeps equal to requirements.txt) has an upper bound,
and admits the version installed in the environment these tests run in: an EE built today gets the tested
series, not a newer major release nobody ran.
"""

from __future__ import annotations

import importlib.metadata

import pytest
import yaml
from awx_job import AWX, REPO
from packaging.requirements import Requirement


def ee_requirements() -> list[Requirement]:
    ee = yaml.safe_load((AWX / "execution-environment.yml").read_text())["dependencies"]
    reqs = [Requirement(ee["ansible_core"]["package_pip"]), Requirement(ee["ansible_runner"]["package_pip"])]
    assert ee["python"] == "../meta/ee-requirements.txt"
    for line in (REPO / "meta" / "ee-requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            reqs.append(Requirement(line))
    return reqs


def test_every_ee_requirement_is_bounded_above():
    reqs = ee_requirements()
    assert {r.name for r in reqs} >= {"ansible-core", "ansible-runner", "python-libmaas", "openstacksdk", "kubernetes"}
    unbounded = [str(r) for r in reqs if not any(s.operator in ("<", "<=", "==", "~=") for s in r.specifier)]
    assert unbounded == []


@pytest.mark.parametrize("req", ee_requirements(), ids=str)
def test_ee_requirement_admits_the_tested_version(req):
    tested = importlib.metadata.version(req.name)
    assert req.specifier.contains(tested, prereleases=True), f"{req}: the tests run with {req.name} {tested}"
