"""Every role's meta/argument_specs.yml: the cluster description (docs/cluster-description-spec.yml) plus the
role's own variables.  ``python tests/unit/roles/role_specs.py`` writes them; test_role_specs.py compares."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]

STORE_NOTE = "The store is the description's C(store)."
COMMON = {
    "capi_wait_timeout": {"description": "Seconds the role may wait for its objects.", "type": "int", "default": 1800},
}
MAAS = {
    "capi_maas_url": {"description": "The MAAS URL (default E(MAAS_URL)).", "type": "str"},
    "capi_maas_api_key": {"description": "The MAAS API key (default E(MAAS_API_KEY)).", "type": "str", "no_log": True},
    "capi_maas_ca_bundle": {
        "description": "The CA bundle (PEM file) that signed the MAAS TLS certificate (default E(MAAS_CA_BUNDLE)).",
        "type": "path",
        "version_added": "0.2.0",
    },
}
HOSTS = {
    "capi_host_driver": {
        "description": "Metal3 - V(ironic) (the collection moves hosts through Ironic) or V(external).",
        "type": "str",
        "choices": ["ironic", "external"],
        "default": "ironic",
    },
    "capi_host_driver_options": {
        "description": "Metal3 - the host driver's options (C(cloud) or C(ironic_url), C(boot_iso), C(poll)).",
        "type": "dict",
        "default": {},
    },
}
ROUNDS = {
    "capi_round_delay": {
        "description": (
            "The longest wait, in seconds, between two steps of a machine while nothing moves "
            "(O(baremetal.capi.cluster_machines#module:wait_sleep))."
        ),
        "type": "int",
        "default": 2,
    },
    "capi_workload_kubeconfig": {
        "description": "A kubeconfig (path or text) of the workload API instead of the C(<cluster>-kubeconfig) Secret.",
        "type": "str",
        "default": "",
    },
}

MAAS_KUBECONFIG = {
    "capi_maas_kubeconfig": {
        "description": "With C(endpoint_via_maas_dns), the kubeconfig for the MAAS DNS record's address (mode 0600).",
        "type": "str",
    },
}

ROLES = {
    "cluster": (
        "The Cluster and its infrastructure cluster (Metal3Cluster or MaasCluster)",
        "Writes the Namespace and the Cluster of the description, then reconciles the Metal3Cluster (endpoint, "
        "failure domains) through M(baremetal.capi.metal3_cluster) or the MaasCluster through the "
        "C(baremetal.capi.maas_cluster) role. C(tasks_from: delete) deletes the whole cluster in Cluster API's order.",
        {**COMMON, **MAAS, **HOSTS, **ROUNDS, **MAAS_KUBECONFIG},
    ),
    "maas_cluster": (
        "The MaasCluster: DNS name and record, endpoint (CAPMAAS's MaasCluster controller)",
        "Runs M(baremetal.capi.maas_cluster) for the description's cluster and reports the endpoint's DNS name.",
        {**COMMON, **MAAS, "capi_workload_kubeconfig": ROUNDS["capi_workload_kubeconfig"], **MAAS_KUBECONFIG},
    ),
    "data": (
        "IP pools and the Metal3DataTemplate (Metal3)",
        "Writes the description's IPPools (M(baremetal.capi.ippool)) and its Metal3DataTemplate "
        "(M(baremetal.capi.metal3_data_template)).",
        {},
    ),
    "bootstrap_kubeadm": (
        "Kubeadm bootstrap: KubeadmConfigTemplates, cluster CAs, the kubeconfig Secret",
        "Writes a KubeadmConfigTemplate per worker pool and runs M(baremetal.capi.kubeadm_bootstrap) (cluster CA "
        "Secrets, C(<cluster>-kubeconfig), bootstrap data of machines that lack it).",
        {
            "capi_kubeconfig_dest": {
                "description": "Also write the admin kubeconfig here (mode 0600).",
                "type": "str",
                "default": "",
            }
        },
    ),
    "machines": (
        "KubeadmControlPlane, MachineDeployments and their machines, converged in one task",
        "Writes the infrastructure machine templates (content-named: a change is a new template), the "
        "KubeadmControlPlane and one MachineDeployment per worker pool and failure domain, removes "
        "MachineDeployments of pools no longer described, then runs M(baremetal.capi.cluster_machines) once, "
        "which converges every machine in one process until each is Running with a Ready Node. Sets "
        "C(capi_machines) (the machine table rows).",
        {
            **COMMON,
            **MAAS,
            **HOSTS,
            **ROUNDS,
            "capi_machines_converge": {
                "description": "Converge after writing the objects.",
                "type": "bool",
                "default": True,
            },
        },
    ),
    "maas_machines": (
        "The machines of a MAAS cluster",
        "The C(baremetal.capi.machines) role for a MAAS cluster; with the description's C(endpoint_via_maas_dns), "
        "the workload API is reached at the MAAS DNS record's address that answers.",
        {
            **COMMON,
            **MAAS,
            **ROUNDS,
            **MAAS_KUBECONFIG,
        },
    ),
    "remediation": (
        "Reboot remediation of the cluster's unhealthy machines",
        "M(baremetal.capi.machine_health_info), then M(baremetal.capi.metal3_remediation) or "
        "M(baremetal.capi.maas_remediation) for the machines it finds unhealthy (as playbooks/remediate.yml).",
        {
            **MAAS,
            **HOSTS,
            "capi_unhealthy_timeout": {
                "description": "Seconds a Node may be NotReady or Unknown.",
                "type": "int",
                "default": 300,
            },
            "capi_node_startup_timeout": {
                "description": "Seconds a Machine may have no Node.",
                "type": "int",
                "default": 600,
            },
            "capi_remediation_strategy": {
                "description": "C(retryLimit), C(timeoutSeconds).",
                "type": "dict",
                "default": {},
            },
            "capi_remediation_timeout": {
                "description": "Seconds the remediation may take.",
                "type": "int",
                "default": 3600,
            },
            "capi_workload_kubeconfig": ROUNDS["capi_workload_kubeconfig"],
        },
    ),
    "addons": (
        "The cluster's add-ons (ClusterResourceSets), a CNI among them",
        "Runs M(baremetal.capi.cluster_addons) for the description's C(addons): a ClusterResourceSet per add-on "
        "(its manifests in a ConfigMap), those of add-ons no longer described removed. The converge loop of the "
        "C(baremetal.capi.machines) role applies them once the workload API answers.",
        {
            "capi_addons_dir": {
                "description": "Where relative manifest paths are taken from (default the inventory directory).",
                "type": "str",
                "default": "",
            },
            "capi_addons_apply": {
                "description": "Apply the add-ons now (the workload API must answer).",
                "type": "bool",
                "default": False,
            },
            "capi_workload_kubeconfig": ROUNDS["capi_workload_kubeconfig"],
        },
    ),
    "labelsync": (
        "BareMetalHost labels to Nodes (Metal3)",
        "M(baremetal.capi.metal3_labelsync) for the description's cluster.",
        {"capi_workload_kubeconfig": ROUNDS["capi_workload_kubeconfig"]},
    ),
}


def generate() -> dict[str, str]:
    desc = yaml.safe_load((REPO / "docs" / "cluster-description-spec.yml").read_text())
    out = {}
    for role, (short, long, extra) in ROLES.items():
        spec = {
            "argument_specs": {
                "main": {"short_description": short, "description": [long, STORE_NOTE], "options": {**desc, **extra}}
            }
        }
        text = "---\n# Generated by tests/unit/roles/role_specs.py from docs/cluster-description-spec.yml.\n"
        out[f"roles/{role}/meta/argument_specs.yml"] = text + yaml.safe_dump(spec, sort_keys=False, width=110)
    return out


if __name__ == "__main__":
    for path, text in generate().items():
        (REPO / path).write_text(text)
        print("wrote", path)
