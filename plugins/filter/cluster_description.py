# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One cluster description (the ``capi_cluster`` variable) -> the Cluster API objects that make it.

docs/cluster-description.md documents the description.  The roles write what
these filters return with ``baremetal.capi.object``; keeping the mapping in
Python keeps it testable and keeps cloud-init's own ``{{ ds.meta_data.* }}``
away from Ansible's templating: ansible-core 2.19 never templates a filter's output again; before 2.19 a
value that reaches a variable (a loop's ``item``, a fact) is templated again unless it is marked unsafe, so
every filter's output is marked so there (``'ds' is undefined`` otherwise).

- ``capi_objects(desc, part)``: ``part`` is ``cluster`` (Cluster, MaasCluster),
  ``bootstrap`` (KubeadmConfigTemplates), ``machines`` (infrastructure machine
  templates, KubeadmControlPlane, MachineDeployments);
- ``capi_names(desc)``: the names the roles refer to;
- ``capi_machine_table(rows)``: the final table as lines of text.

The mapping is plugins/module_utils/capi/description_objects.py, the table plugins/module_utils/progress.py;
this file only names the filters and turns their errors into filter errors.
"""

from __future__ import annotations

import functools

from ansible_collections.baremetal.capi.plugins.module_utils.capi.description_objects import (
    DescriptionError,
    kubeadm_config_spec,
    names,
    objects,
    scaled,
)
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.progress import machine_table


def _untemplated(value):
    """``value`` as Ansible must never template again (cloud-init's ``{{ ds.* }}`` and the user's data)."""
    from ansible.release import __version__

    if tuple(int(p) for p in __version__.split(".")[:2]) >= (2, 19):
        return value  # data tagging: a filter's output is not trusted as a template
    from ansible.utils.unsafe_proxy import wrap_var

    return wrap_var(value)


def _named_errors(fn):
    """Every failure of a filter as an AnsibleFilterError with its message (never "Unknown error")."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ansible.errors import AnsibleFilterError

        try:
            return _untemplated(fn(*args, **kwargs))
        except (DescriptionError, Invalid) as exc:
            raise AnsibleFilterError(str(exc)) from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise AnsibleFilterError(f"{fn.__name__}: {type(exc).__name__}: {exc}") from exc

    return wrapper


class FilterModule:
    def filters(self):
        return {
            name: _named_errors(fn)
            for name, fn in {
                "capi_objects": objects,
                "capi_names": names,
                "capi_scaled": scaled,
                "capi_kubeadm_config_spec": kubeadm_config_spec,
                "capi_machine_table": machine_table,
            }.items()
        }
