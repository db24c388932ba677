#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: baremetalhost
short_description: Register, update or remove Metal3 BareMetalHosts and move them through Ironic
version_added: 0.1.0
description:
  - Writes C(metal3.io/v1alpha1) BareMetalHosts (validated as baremetal-operator's webhook does), a BMC
    credentials Secret when the credentials are given inline, and a HardwareData object when hardware details
    are given.  Fields a task does not name are kept (a merge patch), so a C(consumerRef) or image the machine
    flow set survives re-registration.
  - Then runs the host driver over all the hosts of the task at once.  With O(host_driver=ironic) (the default)
    the collection moves each host itself as baremetal-operator does - Ironic node C(<namespace>~<name>), port
    from C(bootMACAddress), manage (the host is C(available) while the node stays manageable), provide and
    deploy with a config drive when C(spec.image) and C(spec.online) are set, deprovision when the image is
    removed, power from C(spec.online) and C(reboot.metal3.io) annotations (soft unless C({"mode":"hard"});
    a soft power-off the BMC refuses is a C(power management error) and the next run powers off hard), errors
    into C(status.errorType)/C(errorMessage).  RAID (C(spec.raid)), BIOS settings (the host's
    HostFirmwareSettings) and firmware updates (its HostFirmwareComponents) are applied in C(preparing) by manual
    cleaning, as baremetal-operator applies them.  With O(host_driver=external) something else moves the hosts and
    this module only writes the spec and waits on status.
  - The C(baremetalhost.metal3.io/detached) annotation, as baremetal-operator - on a C(provisioned),
    C(externally provisioned), C(available) or C(ready) host (any state with C({"force":true})) the Ironic node
    is removed without touching the machine, C(status.operationalStatus) becomes C(detached) and nothing more is
    asked of Ironic; removing the annotation registers the host again and adopts a provisioned one.  A detached
    host is removed (O(state=absent)) without power-off or deprovisioning, unless the annotation says
    C({"deleteAction":"delay"}).
  - Without O(wait), each host gets one reconcile step; with it, the hosts are reconciled until they reach
    what their spec asks for (or O(wait_state)), an error, or O(wait_timeout).
  - A host whose driver reports a new error during the task fails with that error (for example Ironic's
    deploy error); the other hosts go on.  A later run retries it, as baremetal-operator does.
  - The C(fake://) BMC scheme is for the collection's lab and tests only - an Ironic fake-hardware node.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.wait
  - baremetal.capi.attributes
options:
  name:
    description: The host's name, for a single host. Use O(hosts) for many.
    type: str
  namespace:
    description: The namespace of O(name), and of the O(hosts) that name none. Defaults to O(store.namespace).
    type: str
  spec:
    description:
      - The BareMetalHost spec of O(name), with baremetal-operator's field names - C(bmc) (C(address),
        C(credentialsName), C(disableCertificateVerification)), C(bootMACAddress), C(online),
        C(automatedCleaningMode) (V(metadata) or V(disabled)), C(bootMode), C(inspectionMode), C(rootDeviceHints),
        C(externallyProvisioned), C(image), C(customDeploy), C(userData), C(metaData), C(networkData),
        C(disablePowerOff), C(architecture), C(raid) (C(hardwareRAIDVolumes) or C(softwareRAIDVolumes)),
        C(firmware).
      - BMC addresses in BMO's forms - C(redfish-virtualmedia://), C(redfish://), C(redfish+http(s)://),
        C(idrac-virtualmedia://), C(ilo5-virtualmedia://), C(redfish-uefihttp://), C(ipmi://), a bare host.
    type: dict
  labels:
    description: Labels of O(name), merged over the stored ones.
    type: dict
  annotations:
    description: Annotations of O(name), merged over the stored ones (a V(null) value removes one).
    type: dict
  bmc_username:
    description: BMC user of O(name); with O(bmc_password) stored in the Secret C(<name>-bmc-secret)
      (or C(spec.bmc.credentialsName)).
    type: str
  bmc_password:
    description: BMC password of O(name). Never logged.
    type: str
  hardware:
    description: Hardware details of O(name) (BMO's C(HardwareDetails)), stored as its HardwareData object and used
      instead of inspection.
    type: dict
  hosts:
    description: Many hosts in one task, each with the options above (C(name) required).
    type: list
    elements: dict
    suboptions:
      name:
        type: str
        required: true
        description: The host's name.
      namespace:
        type: str
        description: The host's namespace.
      spec:
        type: dict
        description: As O(spec).
      labels:
        type: dict
        description: As O(labels).
      annotations:
        type: dict
        description: As O(annotations).
      bmc_username:
        type: str
        description: As O(bmc_username).
      bmc_password:
        type: str
        description: As O(bmc_password). Never logged.
      hardware:
        type: dict
        description: As O(hardware).
  state:
    description: V(present) registers or updates; V(absent) deprovisions, deletes the Ironic node and the host.
    type: str
    choices: [present, absent]
    default: present
  host_driver:
    description: Who moves the hosts - V(ironic) (this collection, through Ironic) or V(external).
    type: str
    choices: [ironic, external]
    default: ironic
  cloud:
    description:
      - The clouds.yaml entry of the Ironic endpoint. When not set, E(OS_CLOUD) (E(OS_CLIENT_CONFIG_FILE) names
        the file; AWX's OpenStack credential sets both).
    type: str
  ironic_url:
    description: An Ironic endpoint used without authentication (auth_type none), instead of O(cloud).
    type: str
  boot_iso:
    description:
      - Deploy ordinary images with Ironic's C(ramdisk) deploy interface booting this ISO (config drive included),
        for Ironics without an agent ramdisk such as the collection's lab. Not a baremetal-operator behaviour.
    type: str
  deploy_kernel:
    description:
      - The deploy (ironic-python-agent) kernel URL set in the Ironic node's C(driver_info) at registration, as
        baremetal-operator's E(DEPLOY_KERNEL_URL) - inspection and cleaning boot it before any deployment. Give it
        with O(deploy_ramdisk), or give O(deploy_iso) for virtual-media BMCs. Not needed when Ironic has its own
        defaults (C([conductor]deploy_kernel) in ironic.conf).
      - As baremetal-operator chooses per host, a host whose BMC has virtual media (or HTTP boot) gets O(deploy_iso)
        when it is given, and every other host (IPMI, PXE-booting Redfish) the kernel and ramdisk; the keys of the
        other choice and C(kernel_append_params) are removed from C(driver_info).
    type: str
    version_added: 0.2.0
  deploy_ramdisk:
    description:
      - The deploy ramdisk (initramfs) URL, as baremetal-operator's E(DEPLOY_RAMDISK_URL) (see O(deploy_kernel)).
    type: str
    version_added: 0.2.0
  deploy_iso:
    description: The deploy ISO URL for virtual-media boot, as baremetal-operator's E(DEPLOY_ISO_URL).
    type: str
    version_added: 0.2.0
  max_provisioning_retries:
    description:
      - Failed provisioning attempts of one image (a failed deploy, Ironic's validation refusing it) after which a
        host is not provisioned with it again until its image changes, as baremetal-operator's
        C(--max-provisioning-retries). V(0) means no limit. The count is the host's C(status.provisioningFailCount).
      - Defaults to 5, baremetal-operator's default.
    type: int
    version_added: 0.2.0
  wait:
    description: Reconcile until every host reaches its goal (or O(wait_state)), fails, or O(wait_timeout) passes.
    type: bool
    default: false
  wait_state:
    description: Wait for this C(status.provisioning.state) (for example V(available)) instead of the spec's goal.
    type: str
  wait_timeout:
    description: Seconds to wait.
    type: int
    default: 1800
  wait_sleep:
    description: Seconds between reconcile steps of a host while Ironic works.
    type: float
    default: 2
  workers:
    description: Hosts reconciled at once.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: Register Redfish hosts at once and wait until they are available
  baremetal.capi.baremetalhost:
    namespace: metal3
    cloud: lab-ironic  # or OS_CLOUD + OS_CLIENT_CONFIG_FILE from AWX's OpenStack credential
    hosts:
      - name: node-1
        spec:
          bmc:
            address: redfish-virtualmedia+http://127.0.0.1:28001/redfish/v1/Systems/1
            credentialsName: node-1-bmc-secret
          bootMACAddress: "00:5c:52:31:3a:01"
          online: false
          automatedCleaningMode: disabled
      - name: node-2
        spec:
          bmc:
            address: ipmi://10.0.0.12:623
            credentialsName: node-2-bmc-secret
          bootMACAddress: "00:5c:52:31:3a:02"
          online: false
    wait: true

- name: One host, credentials inline, hardware details instead of inspection
  baremetal.capi.baremetalhost:
    name: node-0
    namespace: metal3
    spec:
      bmc:
        address: redfish-virtualmedia+https://10.0.0.10/redfish/v1/Systems/1
        disableCertificateVerification: true
      bootMACAddress: "00:5c:52:31:3a:01"
      online: true
      automatedCleaningMode: disabled
      inspectionMode: disabled
    bmc_username: admin
    bmc_password: "{{ vault_bmc_password }}"
    labels:
      infrastructure.cluster.x-k8s.io/failure-domain: rack-1
    hardware:
      hostname: node-0
      nics:
        - {name: eth0, mac: "00:5c:52:31:3a:01", ip: 192.168.111.20}

- name: Reboot a host the way remediation does
  baremetal.capi.baremetalhost:
    name: node-0
    namespace: metal3
    annotations:
      reboot.metal3.io/ops: '{"mode":"hard"}'
    wait: true

- name: Remove a host (deprovisioned, Ironic node deleted)
  baremetal.capi.baremetalhost:
    name: node-0
    namespace: metal3
    state: absent
    wait: true
"""

RETURN = r"""
hosts:
  description: One entry per host, in task order.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: The host's name., type: str, returned: always}
    namespace: {description: Its namespace., type: str, returned: always}
    changed: {description: Whether this task changed it (objects or Ironic)., type: bool, returned: always}
    failed: {description: Whether it failed., type: bool, returned: always}
    message: {description: 'What the last step did, or the error.', type: str, returned: always}
    state: {description: C(status.provisioning.state) after the task., type: str, returned: always}
    poweredOn: {description: C(status.poweredOn)., type: bool, returned: always}
    errorType: {description: C(status.errorType)., type: str, returned: always}
    errorMessage: {description: C(status.errorMessage)., type: str, returned: always}
    object: {description: The BareMetalHost after the task., type: dict, returned: always}
"""

from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_task  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    HOST_MUTUALLY_EXCLUSIVE,
    HOST_REQUIRED_ONE_OF,
    CapiModule,
    host_argument_spec,
)


def main():
    # On the controller (connection: local) the action plugin of the same name runs host_task itself and
    # prints a line per host as it moves; this module is what runs on any other connection.
    module = CapiModule(
        argument_spec=host_argument_spec(),
        mutually_exclusive=HOST_MUTUALLY_EXCLUSIVE,
        required_one_of=HOST_REQUIRED_ONE_OF,
        supports_check_mode=True,
    )
    with module.errors():
        done = host_task.run(module.params, module.store, module.params["namespace"] or module.namespace,
                             module.check_mode)  # fmt: skip
        if done["failures"]:
            module.fail("; ".join(done["failures"]), hosts=done["hosts"], changed=done["changed"])
        module.exit(done["changed"], before=done["before"], after=done["after"], hosts=done["hosts"])


if __name__ == "__main__":
    main()
