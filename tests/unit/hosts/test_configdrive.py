"""Image validation, instance_info and config drive assembly (baremetal-operator pkg/provisioner/ironic/ironic.go
getConfigDrive, getInstanceInfo) with a real sqlite store."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import configdrive as cd

URL = "http://images.example.com/ubuntu.img"


def host(spec=None, name="node-0", ns="ns1", uid="1234-uid"):
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "spec": spec or {},
    }


def secret(store, name, ns="ns1", **data):
    store.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "stringData": data}
    )


# -- image validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        {"url": URL, "checksum": "abc", "checksumType": "sha256", "format": "raw"},
        {"url": URL, "checksum": "http://images.example.com/ubuntu.img.sha256"},
        {"url": "http://x/live.iso", "format": "live-iso"},
        {"url": "oci://quay.io/org/image:tag"},
        {"url": URL, "checksum": "abc", "checksumType": "auto", "diskFormat": "qcow2"},
    ],
)
def test_valid_images(image):
    cd.validate_image(image)


@pytest.mark.parametrize(
    "image,field,text",
    [
        ({}, "spec.image", "either image or customDeploy is required"),
        ({"url": "not a url", "checksum": "abc"}, "spec.image.url", "invalid"),
        ({"url": URL}, "spec.image.checksum", "checksum is required"),
        ({"url": "oci://quay.io/org/image", "checksum": "abc"}, "spec.image.checksum", "oci"),
        ({"url": URL, "checksum": "abc", "checksumType": "crc32"}, "spec.image.checksumType", "crc32"),
        ({"url": URL, "checksum": "abc", "format": "iso"}, "spec.image.format", "iso"),
    ],
)
def test_invalid_images_name_the_field(image, field, text):
    with pytest.raises(Invalid) as err:
        cd.validate_image(image)
    assert err.value.field == field
    assert text in str(err.value)


def test_custom_deploy_needs_no_image():
    cd.validate_image(None, {"method": "install_coreos"})


# -- instance_info -------------------------------------------------------------------------------


def test_instance_info_sha256_goes_to_os_hash():
    info, iface = cd.instance_info(
        host({"image": {"url": URL, "checksum": "c", "checksumType": "sha256", "format": "raw"}})
    )
    assert iface is None
    assert info == {
        "capabilities": {},
        "image_source": URL,
        "image_os_hash_algo": "sha256",
        "image_os_hash_value": "c",
        "image_disk_format": "raw",
    }


def test_instance_info_auto_checksum_goes_to_image_checksum():
    info, _ = cd.instance_info(host({"image": {"url": URL, "checksum": "c", "checksumType": "auto"}}))
    assert info["image_checksum"] == "c" and "image_os_hash_algo" not in info


def test_instance_info_live_iso_and_custom_deploy():
    info, iface = cd.instance_info(host({"image": {"url": "http://x/l.iso", "format": "live-iso"}}))
    assert iface == "ramdisk" and info["boot_iso"] == "http://x/l.iso" and "image_source" not in info
    info, iface = cd.instance_info(host({"customDeploy": {"method": "install_coreos"}}))
    assert iface == "custom-agent" and info["image_os_hash_algo"] == ""


def test_instance_info_secure_boot_and_root_device():
    spec = {"image": {"url": URL, "checksum": "c"}, "bootMode": "UEFISecureBoot"}
    info, _ = cd.instance_info(host(spec), hints={"deviceName": "/dev/disk/by-path/pci-0", "minSizeGigabytes": 20})
    assert info["capabilities"] == {"secure_boot": "true"}
    assert info["root_device"] == {"by_path": "s== /dev/disk/by-path/pci-0", "size": ">= 20"}


def test_instance_info_boot_iso_option_deploys_with_ramdisk():
    info, iface = cd.instance_info(host({"image": {"url": URL, "checksum": "c"}}), boot_iso="http://lab/boot.iso")
    assert iface == "ramdisk" and info["boot_iso"] == "http://lab/boot.iso" and "image_source" not in info


def test_root_device_hint_mapping():
    hints = {
        "deviceName": "/dev/sdb",
        "hctl": "1:0:0:0",
        "model": "M",
        "vendor": "V",
        "serialNumber": "S",
        "wwn": "W",
        "rotational": False,
    }
    assert cd.root_device(hints) == {
        "name": "s== /dev/sdb",
        "hctl": "s== 1:0:0:0",
        "model": "<in> M",
        "vendor": "<in> V",
        "serial": "s== S",
        "wwn": "s== W",
        "rotational": "false",
    }


# -- config drive ---------------------------------------------------------------------------------


def test_meta_data_defaults_without_secret(store):
    drive = cd.config_drive(store, host({"image": {"url": URL, "checksum": "c"}}))
    assert drive == {
        "meta_data": {
            "uuid": "1234-uid",
            "metal3-namespace": "ns1",
            "metal3-name": "node-0",
            "local-hostname": "node-0",
            "local_hostname": "node-0",
            "name": "node-0",
        }
    }


def test_meta_data_secret_merges_over_defaults(store):
    secret(store, "md", metaData="local-hostname: worker-0\nproviderid: metal3://x\n")
    secret(store, "ud", userData="#cloud-config\nruncmd: []\n")
    secret(store, "nd", networkData='{"links": [{"id": "eth0"}], "networks": []}')
    spec = {
        "image": {"url": URL, "checksum": "c"},
        "metaData": {"name": "md", "namespace": "ns1"},
        "userData": {"name": "ud"},
        "networkData": {"name": "nd", "namespace": "ns1"},
    }
    drive = cd.config_drive(store, host(spec))
    assert drive["user_data"] == "#cloud-config\nruncmd: []\n"
    assert drive["network_data"] == {"links": [{"id": "eth0"}], "networks": []}
    md = drive["meta_data"]
    assert md["local-hostname"] == "worker-0"  # the secret wins
    assert md["providerid"] == "metal3://x"
    assert md["local_hostname"] == "node-0" and md["uuid"] == "1234-uid"  # the other defaults stay


def test_value_key_fallback(store):
    secret(store, "ud", value="#!/bin/sh\n")
    secret(store, "md", value="a: b\n")
    spec = {"image": {"url": URL, "checksum": "c"}, "userData": {"name": "ud"}, "metaData": {"name": "md"}}
    drive = cd.config_drive(store, host(spec))
    assert drive["user_data"] == "#!/bin/sh\n" and drive["meta_data"]["a"] == "b"


def test_user_data_secret_without_key_is_an_error(store):
    secret(store, "ud", other="x")
    with pytest.raises(Invalid) as err:
        cd.config_drive(store, host({"image": {"url": URL, "checksum": "c"}, "userData": {"name": "ud"}}))
    assert err.value.field == "spec.userData"


def test_missing_secret_and_other_namespace_are_errors(store):
    with pytest.raises(Invalid, match="not found"):
        cd.config_drive(store, host({"image": {"url": URL, "checksum": "c"}, "metaData": {"name": "nope"}}))
    secret(store, "md", ns="other", metaData="a: b")
    with pytest.raises(Invalid, match="namespace"):
        cd.config_drive(
            store, host({"image": {"url": URL, "checksum": "c"}, "metaData": {"name": "md", "namespace": "other"}})
        )


def test_network_data_missing_key_gives_no_network_data(store):
    secret(store, "nd", something="x")
    drive = cd.config_drive(store, host({"image": {"url": URL, "checksum": "c"}, "networkData": {"name": "nd"}}))
    assert "network_data" not in drive


def test_preprovisioning_network_data_is_the_fallback(store):
    secret(store, "pre", networkData="links: []\n")
    drive = cd.config_drive(
        store, host({"image": {"url": URL, "checksum": "c"}, "preprovisioningNetworkDataName": "pre"})
    )
    assert drive["network_data"] == {"links": []}


def test_live_iso_has_no_config_drive(store):
    assert cd.config_drive(store, host({"image": {"url": "http://x/l.iso", "format": "live-iso"}})) is None
