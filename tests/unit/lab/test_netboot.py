"""The lab hosts' iPXE firmware (lab/nodesim/netboot.py) on scripts shaped like the ones Ironic's ipxe boot interface
writes: a boot script that tries each NIC's ``pxelinux.cfg/<MAC>``, a node script that loads the deploy kernel and
initramfs (retrying, then powering off), and the whole-disk ``sanboot``. The downloads come from a dict here; the
lab test (tests/integration/agent/test_agent_ipmi.py) boots Ironic's real scripts from the lab's image server.
"""

from __future__ import annotations

import pytest

from lab.ironic import iso
from lab.nodesim import netboot

BASE = "http://127.0.0.1:28080"
MAC = "00:5c:52:31:3a:0d"

BOOT_SCRIPT = """#!ipxe
# try every NIC
set netid:int32 -1
:loop
inc netid || chain pxelinux.cfg/${mac:hexhyp} || goto old_rom
isset ${net${netid}/mac} || goto loop_done
echo Attempting to boot from MAC ${net${netid}/mac:hexhyp}
chain pxelinux.cfg/${net${netid}/mac:hexhyp} || goto loop
echo the chained script returned
exit 0

:loop_done
echo PXE boot failed! No configuration found for any of the present NICs.
prompt --timeout 180
reboot

:old_rom
reboot
"""

NODE_SCRIPT = """#!ipxe
set attempts:int32 3
set i:int32 0
goto {start}

:deploy
imgfree
kernel {kernel} selinux=0 text {params} BOOTIF=${{mac}} initrd=deploy_ramdisk || goto retry
initrd {ramdisk} || goto retry
boot

:retry
iseq ${{i}} ${{attempts}} && goto fail ||
inc i
echo No response, retrying in ${{i}} seconds.
sleep ${{i}}
goto deploy

:fail
echo Failed after ${{attempts}} attempts
poweroff

:boot_whole_disk
sanboot --no-describe || exit 0
"""

PARAMS = (
    "nofb vga=normal ipa-api-url=http://127.0.0.1:26385"
    " ipa-inspection-callback-url=http://127.0.0.1:26385/v1/continue_inspection"
)
UUID = "0f7c0d4e-3c1a-4f4e-9f0e-0d7a8c6b5a13"
KERNEL = iso.IPA_KERNEL_MAGIC + b"kernel bytes"
RAMDISK = iso.IPA_RAMDISK_MAGIC + b"ramdisk bytes"


def files(start="deploy", kernel=f"{BASE}/{UUID}/deploy_kernel", ramdisk=f"{BASE}/{UUID}/deploy_ramdisk", **extra):
    out = {
        f"{BASE}/boot.ipxe": BOOT_SCRIPT.encode(),
        f"{BASE}/pxelinux.cfg/00-5c-52-31-3a-0d": NODE_SCRIPT.format(
            start=start, kernel=kernel, ramdisk=ramdisk, params=PARAMS
        ).encode(),
        f"{BASE}/{UUID}/deploy_kernel": KERNEL,
        f"{BASE}/{UUID}/deploy_ramdisk": RAMDISK,
    }
    out.update(extra)
    return out


def firmware(served: dict, macs=(MAC,)):
    asked = []

    def fetch(url):
        asked.append(url)
        if url not in served:
            raise netboot.CommandFailed(f"{url}: HTTP 404")
        data = served[url]
        return data

    fw = netboot.Firmware(list(macs), fetch=fetch)
    fw.asked = asked
    return fw


def test_the_agent_kernel_boots_with_ironics_command_line():
    fw = firmware(files())
    out = fw.boot(f"{BASE}/boot.ipxe")
    assert out.kind == "kernel", out
    assert out.kernel_url == f"{BASE}/{UUID}/deploy_kernel"
    assert out.initrds == [(f"{BASE}/{UUID}/deploy_ramdisk", RAMDISK)]
    # settings expanded as iPXE does: ${mac} in the command line, the NIC's MAC with hyphens in the chained name
    assert f"BOOTIF={MAC}" in out.cmdline.split()
    assert fw.asked[:2] == [f"{BASE}/boot.ipxe", f"{BASE}/pxelinux.cfg/00-5c-52-31-3a-0d"]
    assert out.console == ["Attempting to boot from MAC 00-5c-52-31-3a-0d"]
    assert netboot.agent_params(out) == {
        "ipa-api-url": "http://127.0.0.1:26385",
        "ipa-inspection-callback-url": "http://127.0.0.1:26385/v1/continue_inspection",
    }


def test_the_second_nic_is_tried_when_the_first_has_no_script():
    served = files()
    served[f"{BASE}/pxelinux.cfg/00-5c-52-31-3a-99"] = served.pop(f"{BASE}/pxelinux.cfg/00-5c-52-31-3a-0d")
    out = firmware(served, macs=(MAC, "00:5c:52:31:3a:99")).boot(f"{BASE}/boot.ipxe")
    assert out.kind == "kernel" and netboot.agent_params(out) is not None


def test_no_script_for_the_host_reboots_after_saying_so():
    served = files()
    del served[f"{BASE}/pxelinux.cfg/00-5c-52-31-3a-0d"]
    out = firmware(served).boot(f"{BASE}/boot.ipxe")
    assert out.kind == "reboot"
    assert "PXE boot failed! No configuration found for any of the present NICs." in out.console
    assert netboot.agent_params(out) is None


def test_a_kernel_that_cannot_be_fetched_is_retried_then_the_host_powers_off():
    fw = firmware(files(kernel=f"{BASE}/{UUID}/missing"))
    out = fw.boot(f"{BASE}/boot.ipxe")
    assert out.kind == "poweroff"
    assert fw.asked.count(f"{BASE}/{UUID}/missing") == 4  # the first try and three retries
    assert out.console[-1] == "Failed after 3 attempts"


def test_whole_disk_boots_the_local_disk():
    out = firmware(files(start="boot_whole_disk")).boot(f"{BASE}/boot.ipxe")
    assert out.kind == "sanboot" and out.sanboot_url is None
    assert netboot.agent_params(out) is None


def test_a_kernel_that_is_not_the_agent_runs_no_agent():
    served = files()
    served[f"{BASE}/{UUID}/deploy_kernel"] = b"\x7fELF some other kernel"
    out = firmware(served).boot(f"{BASE}/boot.ipxe")
    assert out.kind == "kernel" and netboot.agent_params(out) is None
    served = files()
    served[f"{BASE}/{UUID}/deploy_ramdisk"] = b"another initramfs"
    assert netboot.agent_params(firmware(served).boot(f"{BASE}/boot.ipxe")) is None


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (b"MZ\x90\x00 an EFI binary", "not an iPXE script"),
        (b"#!ipxe\nntp pool.ntp.org\n", "ntp: a command this firmware does not know"),
        (b"#!ipxe\n:again\ngoto again\n", "a script that never boots"),
    ],
)
def test_what_this_firmware_cannot_run_fails_the_boot(script, reason):
    out = firmware({f"{BASE}/boot.ipxe": script}).boot(f"{BASE}/boot.ipxe")
    assert out.kind == "failed" and reason in out.reason, out


def test_an_unhandled_failure_ends_the_script():
    out = firmware({f"{BASE}/boot.ipxe": b"#!ipxe\nchain nowhere\necho not reached\n"}).boot(f"{BASE}/boot.ipxe")
    assert out.kind == "failed" and "not reached" not in out.console


def test_a_script_that_ends_boots_nothing():
    out = firmware({f"{BASE}/boot.ipxe": b"#!ipxe\necho hello\n"}).boot(f"{BASE}/boot.ipxe")
    assert out.kind == "exit" and out.console == ["hello"]
