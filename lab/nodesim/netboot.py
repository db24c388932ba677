"""A lab host's network boot: the iPXE firmware of a host whose BMC set its boot device to PXE.

A host without virtual media (the lab's IPMI host) boots Ironic's ramdisk as Metal3's do: the NIC's firmware asks
DHCP, Metal3's dnsmasq answers an iPXE client with ``<http_url>/boot.ipxe``, and iPXE runs the scripts Ironic's
``ipxe`` boot interface wrote under its ``http_root`` (served by the lab's image server): ``boot.ipxe`` chains
``pxelinux.cfg/<MAC with hyphens>``, the node's own script (``<node uuid>/config``), which loads the deploy kernel and
initramfs Ironic cached from the node's ``driver_info`` and boots the kernel with Ironic's command line.

There is no DHCP in the lab (Ironic runs with ``dhcp_provider = none``), so the firmware starts from the URL that
DHCP would give, and what runs here is iPXE's side only: this module interprets the scripts Ironic renders (the
commands they use: set, inc, isset, iseq, echo, goto, chain, imgfree, kernel, initrd, boot, sanboot, exit, prompt,
sleep, reboot, poweroff; ``||`` and ``&&``; ``${...}`` settings, nested, with ``:hexhyp``) and downloads what they
name. Ironic is never asked anything; a script it did not write (a 404), a kernel that is not the lab's agent, a
command this firmware does not know: the boot fails, as a host would sit at iPXE's prompt.

The outcome of a boot is one of: the kernel (URL, command line, initrds, their bytes); ``sanboot`` (with no URI:
boot the local disk, what Ironic's ``boot_whole_disk`` does); a reboot or power-off the script asked for; a
failure (why). ``sleep`` is not waited: the node simulator's poll is this firmware's clock.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Callable

MAX_STEPS = 20000  # a script that loops for ever is a failed boot, not a hung simulator
MAX_DEPTH = 8  # nested chains


class BootFailed(Exception):
    pass


class CommandFailed(Exception):
    """A command's non-zero exit status: the rest of its line may handle it (``||``); else the script stops."""


@dataclass
class Outcome:
    kind: str  # "kernel", "sanboot", "reboot", "poweroff", "exit", "failed"
    reason: str = ""
    kernel_url: str | None = None
    cmdline: str = ""
    kernel: bytes | None = None
    initrds: list[tuple[str, bytes]] = field(default_factory=list)
    sanboot_url: str | None = None
    console: list[str] = field(default_factory=list)  # what `echo` printed

    def params(self) -> dict[str, str]:
        """The kernel command line's ``key=value`` words (the ramdisk's parameters)."""
        out = {}
        for word in self.cmdline.split():
            if "=" in word:
                key, value = word.split("=", 1)
                out[key] = value
        return out


class _Booted(Exception):
    def __init__(self, outcome: Outcome):
        super().__init__(outcome.kind)
        self.outcome = outcome


class _Exit(Exception):
    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


def http_fetch(url: str, timeout: float = 30.0) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as exc:
        raise CommandFailed(f"{url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise CommandFailed(f"{url}: {exc}") from exc


_VAR = re.compile(r"\$\{([^${}]*)\}")


class Firmware:
    """iPXE on a host with these NICs (their MACs, net0 first)."""

    def __init__(self, macs: list[str], fetch: Callable[[str], bytes] = http_fetch):
        self.macs = [m.lower() for m in macs]
        self.fetch = fetch
        self.settings: dict[str, str] = {}
        self.steps = 0
        self.console: list[str] = []
        self.kernel: tuple[str, str, bytes] | None = None  # url, command line, bytes
        self.initrds: list[tuple[str, bytes]] = []

    # -- settings ------------------------------------------------------------------------------------
    def _setting(self, name: str) -> str:
        name, _, fmt = name.partition(":")
        if name in ("mac", "netX/mac"):
            name = "net0/mac"
        m = re.fullmatch(r"net(\d+)/mac", name)
        if m:
            i = int(m.group(1))
            value = self.macs[i] if i < len(self.macs) else ""
        else:
            value = self.settings.get(name, "")
        if fmt == "hexhyp":
            value = value.replace(":", "-")
        return value

    def expand(self, text: str) -> str:
        # innermost first: ${net${netid}/mac:hexhyp}
        for _ in range(64):
            new = _VAR.sub(lambda m: self._setting(m.group(1)), text)
            if new == text:
                return new
            text = new
        raise BootFailed(f"settings nested too deep in {text!r}")

    # -- scripts -------------------------------------------------------------------------------------------
    def boot(self, url: str) -> Outcome:
        """What the host boots, starting from the script at ``url`` (DHCP's boot file)."""
        try:
            status = self._chain(url, depth=0)
        except _Booted as booted:
            booted.outcome.console = self.console
            return booted.outcome
        except BootFailed as exc:
            return Outcome("failed", str(exc), console=self.console)
        if status:
            return Outcome("failed", f"{url}: the script failed", console=self.console)
        # iPXE returns to the firmware, which tries its next boot device: not a boot of anything here
        return Outcome("exit", f"{url}: the script ended without booting", console=self.console)

    def _chain(self, url: str, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise BootFailed(f"{url}: chained scripts nested too deep")
        data = self.fetch(url)
        if not data.startswith(b"#!ipxe"):
            # an executable (an EFI or undionly binary): iPXE itself is what runs here
            raise BootFailed(f"{url}: not an iPXE script (this firmware runs no other images)")
        return self._run(data.decode("utf-8", "replace"), url, depth)

    def _run(self, text: str, base: str, depth: int) -> int:
        lines = [line.strip() for line in text.splitlines()]
        labels = {line[1:].split()[0]: n for n, line in enumerate(lines) if line.startswith(":") and len(line) > 1}
        pc = 0
        try:
            while pc < len(lines):
                self.steps += 1
                if self.steps > MAX_STEPS:
                    raise BootFailed(f"{base}: more than {MAX_STEPS} commands: a script that never boots")
                line = lines[pc]
                pc += 1
                if not line or line.startswith("#") or line.startswith(":"):
                    continue
                jump = self._line(line, base, depth)
                if jump is not None:
                    if jump not in labels:
                        raise CommandFailed(f"goto {jump}: no such label in {base}")
                    pc = labels[jump] + 1
        except _Exit as done:
            return done.status
        except CommandFailed as exc:
            self.console.append(f"{base}: {exc}")
            return 1
        return 0

    def _line(self, line: str, base: str, depth: int) -> str | None:
        """Run one line (commands joined by || and &&); a label to jump to, or None. CommandFailed if the line's
        status is a failure."""
        words = line.split()
        groups: list[tuple[str, list[str]]] = [("", [])]
        for word in words:
            if word in ("||", "&&"):
                groups.append((word, []))
            else:
                groups[-1][1].append(word)
        ok = True
        error: CommandFailed | None = None
        for n, (op, argv) in enumerate(groups):
            if n and ((op == "||" and ok) or (op == "&&" and not ok)):
                continue
            if not argv:  # a trailing `||`: the failure is handled by doing nothing
                ok, error = True, None
                continue
            try:
                jump = self._command(argv, base, depth)
            except CommandFailed as exc:
                ok, error = False, exc
                continue
            if jump is not None:
                return jump
            ok, error = True, None
        if not ok:
            raise error or CommandFailed(line)
        return None

    def _command(self, argv: list[str], base: str, depth: int) -> str | None:
        cmd, args = argv[0], [self.expand(a) for a in argv[1:]]
        args = [a for a in args if a != ""] if cmd in ("isset", "iseq") else args
        if cmd == "set":
            name = args[0].split(":", 1)[0]
            self.settings[name] = " ".join(args[1:])
        elif cmd == "inc":
            name = args[0]
            try:
                self.settings[name] = str(int(self.settings.get(name) or "0") + (int(args[1]) if len(args) > 1 else 1))
            except ValueError as exc:
                raise CommandFailed(f"inc {name}: not a number") from exc
        elif cmd == "isset":
            if not args:
                raise CommandFailed("isset: not set")
        elif cmd == "iseq":
            if len(args) != 2 or args[0] != args[1]:
                raise CommandFailed("iseq: not equal")
        elif cmd == "echo":
            self.console.append(" ".join(a for a in args if a != "-n"))
        elif cmd == "goto":
            return args[0]
        elif cmd in ("imgfree",):
            self.kernel, self.initrds = None, []
        elif cmd in ("prompt", "sleep"):
            pass  # no one at the console; the poll is the clock
        elif cmd == "chain":
            url = urllib.parse.urljoin(base, _uri(args))
            status = self._chain(url, depth + 1)
            if status:
                raise CommandFailed(f"chain {url}: the script failed")
        elif cmd == "kernel":
            rest = _options(args)
            if not rest:
                raise CommandFailed("kernel: no image")
            url = urllib.parse.urljoin(base, rest[0])
            self.kernel = (url, " ".join(rest[1:]), self.fetch(url))
        elif cmd == "initrd":
            rest = _options(args)
            if not rest:
                raise CommandFailed("initrd: no image")
            url = urllib.parse.urljoin(base, rest[0])
            self.initrds.append((url, self.fetch(url)))
        elif cmd == "boot":
            if self.kernel is None:
                raise CommandFailed("boot: no kernel loaded")
            url, cmdline, data = self.kernel
            raise _Booted(Outcome("kernel", kernel_url=url, cmdline=cmdline, kernel=data, initrds=list(self.initrds)))
        elif cmd == "sanboot":
            rest = _options(args)
            raise _Booted(Outcome("sanboot", sanboot_url=urllib.parse.urljoin(base, rest[0]) if rest else None))
        elif cmd == "exit":
            raise _Exit(int(args[0]) if args else 0)
        elif cmd == "reboot":
            raise _Booted(Outcome("reboot", "the script rebooted the host"))
        elif cmd == "poweroff":
            raise _Booted(Outcome("poweroff", "the script powered the host off"))
        else:
            raise BootFailed(f"{base}: {cmd}: a command this firmware does not know")
        return None


_VALUE_OPTIONS = ("--timeout", "--name", "--drive", "--filename", "--extra", "-t")


def _options(args: list[str]) -> list[str]:
    """The arguments after the options before them (``kernel --timeout 5000 URL ...``, ``sanboot --no-describe``):
    the image URI first. Words after the URI are the image's own (a kernel's command line), kept as they are."""
    out: list[str] = []
    it = iter(args)
    for a in it:
        if not out and a.startswith("-"):
            if "=" not in a and a in _VALUE_OPTIONS:
                next(it, None)
            continue
        out.append(a)
    return out


def _uri(args: list[str]) -> str:
    rest = _options(args)
    if not rest:
        raise CommandFailed("chain: no URI")
    return rest[0]


def boot_url(cfg) -> str:
    """What the lab's DHCP would hand an iPXE client (Metal3's dnsmasq: ``tag:ipxe`` → ``<http_url>/boot.ipxe``)."""
    return f"http://{cfg.host}:{cfg.ports.images}/boot.ipxe"


def agent_params(outcome: Outcome) -> dict[str, str] | None:
    """The ramdisk's ``ipa-*`` parameters when the host booted the lab's agent kernel and initramfs, else None."""
    from lab.ironic import iso

    if outcome.kind != "kernel" or not (outcome.kernel or b"").startswith(iso.IPA_KERNEL_MAGIC):
        return None
    if not any(data.startswith(iso.IPA_RAMDISK_MAGIC) for _url, data in outcome.initrds):
        return None  # the agent's kernel without its initramfs panics at boot: nothing runs
    return {k: v for k, v in outcome.params().items() if k.startswith("ipa-")}
