"""The lab's IPMI host in the inventory: after the Redfish hosts, its BMC on the lab's own address and port."""

from __future__ import annotations

from lab.config import LabConfig, Ports
from lab.ironic import hosts


def test_the_ipmi_host_follows_the_redfish_hosts_and_its_bmc_is_the_labs(tmp_path, monkeypatch):
    monkeypatch.delenv("BMCAPI_LAB_HOSTS", raising=False)
    a = LabConfig(root=tmp_path / "a", cache=tmp_path / "cache", ports=Ports.from_base(31000), loopback="127.5")
    b = LabConfig(root=tmp_path / "b", cache=tmp_path / "cache", ports=Ports.from_base(32000), loopback="127.6")
    inv = hosts.inventory(a)
    assert [h["name"] for h in inv["hosts"]] == [f"host-{i:02d}" for i in range(1, 13)]
    (ipmi,) = inv["ipmi_hosts"]
    assert ipmi["name"] == "host-13" and ipmi["ip"] == "127.5.1.13" and ipmi["boot_mac"] == "00:5c:52:31:3a:0d"
    assert ipmi["bmc"]["address"] == "ipmi://127.5.11.13:31012"  # the 13th port of the base, UDP
    assert hosts.inventory(b)["ipmi_hosts"][0]["bmc"]["address"] == "ipmi://127.6.11.13:32012"
    # the emulator holds its machine too; the node simulator finds it from an ipmi node's driver_info
    assert ipmi["uuid"] in {s["uuid"] for s in hosts.sushy_systems(net=a.net(1))}
    assert hosts.ipmi_host_at(a, "127.5.11.13", "31012").name == "host-13"
    assert hosts.ipmi_host_at(a, "127.5.11.13", 623) is None and hosts.ipmi_host_at(b, "127.5.11.13", 31012) is None
    assert inv["images"]["ipa_kernel"].endswith("/images/ipa.kernel")
    assert inv["images"]["ipa_ramdisk"].endswith("/images/ipa.initramfs")


def test_fewer_redfish_hosts_move_the_ipmi_host(monkeypatch):
    monkeypatch.setenv("BMCAPI_LAB_HOSTS", "3")
    assert [h.name for h in hosts.ipmi_hosts()] == ["host-04"]
    assert [h.name for h in hosts.all_hosts()] == ["host-01", "host-02", "host-03", "host-04"]
