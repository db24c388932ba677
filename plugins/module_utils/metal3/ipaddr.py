"""IP pool arithmetic and the IPAM webhooks' validation (pure functions over dicts).

Mirrors metal3-io/ip-address-manager api/v1alpha1/utils.go (GetIPAddress, ValidatePool,
GetPoolSize, addOffsetToIP) and internal/webhooks/v1alpha1/ippool_webhook.go.  Addresses are
numbered as Go's net.IP holds them, 16 bytes (an IPv4 address is ``::ffff:a.b.c.d``):

* ``start`` given: ``start + i``, up to ``end`` when given, and inside ``subnet`` when given (a
  start outside its subnet renders nothing); no ``end`` nor ``subnet``: up to the last address.
* ``subnet`` alone: the address *as written* plus ``1 + i``, up to the subnet's last address
  (broadcast included).  ``10.0.0.0/24`` starts at ``10.0.0.1``; ``10.0.0.10/24`` (host bits set)
  at ``10.0.0.11``.
* neither ``start`` nor ``subnet``: nothing ("either Start or Subnet is required for ipAddress").

Nothing else is excluded: a gateway inside the range is handed out like any other address.
Each entry is therefore one contiguous interval; ``Ranges`` numbers the addresses of all
entries one after the other so that "the first free address" is the lowest free index.
"""

from __future__ import annotations

import bisect
import ipaddress
import json

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

V4_MAPPED = 0xFFFF << 32  # ::ffff:0.0.0.0, where net.IP keeps IPv4 addresses
V4_TOP = V4_MAPPED + (1 << 32) - 1
V6_TOP = (1 << 128) - 1
GO_MAX_INT = (1 << 63) - 1
START_OR_SUBNET = "either Start or Subnet is required for ipAddress"


def parse(value):
    """An ipaddress object as net.ParseIP reads ``value`` (an IPv4-mapped IPv6 is IPv4), or None."""
    if not isinstance(value, str) or not value or "/" in value or "%" in value:
        return None
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        return None
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def normalize(value) -> str | None:
    """The canonical text of an IP (Go's ip.String()), or None."""
    ip = parse(value)
    return str(ip) if ip is not None else None


def address_name(name_prefix: str, ip: str) -> str:
    """``<namePrefix>-<ip with . and : replaced by ->``, trailing dashes trimmed (formatAddressName)."""
    return (name_prefix + "-" + ip.replace(":", "-").replace(".", "-")).rstrip("-")


def _int16(ip) -> int:
    """The big-endian integer of the 16-byte form."""
    return int(ip) + V4_MAPPED if ip.version == 4 else int(ip)


def _from16(value: int):
    if V4_MAPPED <= value <= V4_TOP:
        return ipaddress.IPv4Address(value - V4_MAPPED)
    return ipaddress.IPv6Address(value)


def parse_cidr(value):
    """(the address as written, the network) as net.ParseCIDR returns them, or None."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    addr, _sep, bits = value.partition("/")
    ip = parse(addr)
    if ip is None or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        return None
    if "." in addr and ip.version == 4 and int(bits) > 32 or int(bits) > 128:
        return None
    if ip.version == 4 and ":" in addr:
        return None  # "::ffff:a.b.c.d/n" is an IPv6 prefix to Go; not worth supporting
    try:
        return ip, ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def _contains(net, ip) -> bool:
    return ip is not None and ip.version == net.version and ip in net


class Range:
    """One pool entry: the interval [lo, hi] (16-byte integers) of addresses GetIPAddress renders."""

    def __init__(self, entry: dict):
        self.entry = entry
        start, end = parse(entry.get("start")), parse(entry.get("end"))
        cidr = parse_cidr(entry.get("subnet")) if entry.get("subnet") is not None else None
        # what GetPoolSize accepts: the random strategy's webhook check (see pool_size)
        self.bounded = (start is not None and (end is not None or cidr is not None)) or (
            start is None and cidr is not None
        )
        lo, hi = 1, 0
        if start is not None:
            lo = _int16(start)
            top = V4_TOP if start.version == 4 else V6_TOP
            hi = min(_int16(end), top) if end is not None else top
            if cidr is not None:
                net = cidr[1]
                if _contains(net, start):
                    hi = min(hi, _int16(net.broadcast_address))
                else:
                    lo, hi = 1, 0  # index 0 is already out of the subnet: nothing to render
        elif cidr is not None:
            written, net = cidr
            lo, hi = _int16(written) + 1, _int16(net.broadcast_address)
        self.lo, self.hi = lo, hi
        self.size = max(0, hi - lo + 1)

    def at(self, i: int) -> str:
        return str(_from16(self.lo + i))

    def offset(self, ip) -> int | None:
        if ip is None:
            return None
        value = _int16(ip)
        if not self.lo <= value <= self.hi:
            return None
        return value - self.lo


class Ranges:
    """Every entry of ``spec.pools``, numbered one after the other."""

    def __init__(self, spec: dict):
        self.spec = spec.get("pools") or []
        self.ranges = [Range(e) for e in self.spec]
        self.starts = []
        total = 0
        for r in self.ranges:
            self.starts.append(total)
            total += r.size
        self.total = total

    def iterate(self, first: int = 0):
        """(index, ip, range) from index ``first`` on."""
        for base, r in zip(self.starts, self.ranges, strict=True):
            if first >= base + r.size:
                continue
            for i in range(max(0, first - base), r.size):
                yield base + i, r.at(i), r

    def at(self, idx: int):
        """(ip, range) of index ``idx``, or None past the end."""
        pos = bisect.bisect_right(self.starts, idx) - 1
        while pos >= 0 and pos < len(self.ranges):
            r = self.ranges[pos]
            if idx - self.starts[pos] < r.size:
                return r.at(idx - self.starts[pos]), r
            pos += 1  # an empty range shares its start with the next one
            if pos < len(self.ranges) and idx < self.starts[pos]:
                return None
        return None

    def locate(self, value):
        """(index, range) of an address inside the pools, or None."""
        ip = parse(value) if isinstance(value, str) else value
        if ip is None:
            return None
        for base, r in zip(self.starts, self.ranges, strict=True):
            off = r.offset(ip)
            if off is not None:
                return base + off, r
        return None


# -- ValidatePool and GetPoolSize ------------------------------------------------------------


def validate_entry(entry: dict) -> str | None:
    """ValidatePool's message for one pool entry, or None: formats and start <= end only."""
    start = end = None
    if entry.get("start") is not None:
        start = parse(entry["start"])
        if start is None:
            return f"invalid Start IP {_q(entry['start'])}"
    if entry.get("end") is not None:
        end = parse(entry["end"])
        if end is None:
            return f"invalid End IP {_q(entry['end'])}"
    if entry.get("subnet") is not None and parse_cidr(entry["subnet"]) is None:
        return f"invalid Subnet {_q(entry['subnet'])}: invalid CIDR address: {entry['subnet']}"
    if start is not None and end is not None and _int16(start) > _int16(end):
        return f"end IP {end} is before start IP {start}"
    return None


def pool_size(entry: dict) -> int:
    """GetPoolSize: the entry's size as upstream counts it; ValueError with upstream's message."""
    msg = validate_entry(entry)
    if msg:
        raise ValueError(msg)
    start = parse(entry.get("start"))
    cidr = parse_cidr(entry.get("subnet")) if entry.get("subnet") is not None else None
    if start is None and cidr is None:
        raise ValueError(START_OR_SUBNET)
    inclusive = True
    if start is not None and entry.get("end") is not None:
        lo, hi = _int16(start), _int16(parse(entry["end"]))
    elif start is not None and cidr is not None:
        lo, hi = _int16(start), _int16(cidr[1].broadcast_address)
    elif start is not None:
        raise ValueError("pool with Start requires End or Subnet to determine size")
    else:
        # upstream counts from the network address, whatever the subnet's host bits say
        lo, hi, inclusive = _int16(cidr[1].network_address), _int16(cidr[1].broadcast_address), False
    if hi < lo:
        raise ValueError(f"end IP {_from16(hi)} is before start IP {_from16(lo)}")
    size = hi - lo + (1 if inclusive else 0)
    if size > GO_MAX_INT:
        raise ValueError("pool size exceeds int range")
    return size


# -- webhooks -------------------------------------------------------------------------


def _q(value) -> str:
    """Go's %q of a string value (strconv.Quote), near enough for field errors."""
    return json.dumps(value if isinstance(value, str) else str(value), ensure_ascii=False)


def _invalid(where: str, field: str, value, detail: str) -> Invalid:
    # field.Invalid(path, value, detail).Error() without the path, which Invalid carries apart
    return Invalid(f"Invalid value: {_q(value)}: {detail}", obj=where, field=field)


def _netip(value):
    """netip.ParseAddr: an IPv4-mapped IPv6 address stays IPv6 (it compares after every IPv4)."""
    if not isinstance(value, str) or not value or "/" in value or "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _cmp_key(ip):
    # netip.Addr.Compare: IPv4 sorts before IPv6
    return (ip.version, int(ip))


def in_bounds(spec: dict, value) -> bool:
    """isAddressInBonds: start <= ip, ip <= end, ip inside subnet, for some valid pool entry."""
    ip = _netip(value)
    if ip is None:
        return False
    for entry in spec.get("pools") or []:
        if entry.get("start") is not None:
            start = _netip(entry["start"])
            if start is None or _cmp_key(start) > _cmp_key(ip):
                continue  # an invalid start skips the entry, as upstream
        if entry.get("end") is not None:
            end = _netip(entry["end"])
            if end is None or _cmp_key(end) < _cmp_key(ip):
                continue
        if entry.get("subnet") is not None:
            cidr = parse_cidr(entry["subnet"])
            if cidr is None or not _contains(cidr[1], parse(str(ip))):
                continue
        return True
    return False


def _ip_field(value, where, field) -> None:
    # validateIPAddress: an empty string passes
    if value != "" and parse(value) is None:
        raise _invalid(where, field, value, "is not a valid IP address")


def validate_pool(obj: dict, old: dict | None = None, in_use=()) -> None:
    """IPPool webhook (ValidateCreate / ValidateUpdate), the first error upstream would list."""
    where = meta.ref(obj)
    spec = obj.get("spec") or {}
    # CRD schema: namePrefix required (minLength 1), allocationStrategy enum, prefix <= 128
    if not isinstance(spec.get("namePrefix"), str) or not spec.get("namePrefix"):
        raise Invalid("namePrefix is required", obj=where, field="spec.namePrefix")
    strategy = spec.get("allocationStrategy") or "sequential"
    if strategy not in ("sequential", "random"):
        raise Invalid(
            f'Unsupported value: {_q(strategy)}: supported values: "sequential", "random"',
            obj=where,
            field="spec.allocationStrategy",
        )
    pools = spec.get("pools") or []
    if not isinstance(pools, list) or not all(isinstance(e, dict) for e in pools):
        raise Invalid("must be a list of pool entries", obj=where, field="spec.pools")
    for base, entry in [("spec", spec)] + [(f"spec.pools[{i}]", e) for i, e in enumerate(pools)]:
        prefix = entry.get("prefix", 0)
        if not isinstance(prefix, int) or isinstance(prefix, bool) or not 0 <= prefix <= 128:
            raise Invalid(f"prefix must be an integer 0..128, got {prefix!r}", obj=where, field=f"{base}.prefix")
    if old is not None:
        ospec = old.get("spec") or {}
        if ospec.get("namePrefix") != spec.get("namePrefix"):
            raise _invalid(where, "spec.namePrefix", spec.get("namePrefix"), "cannot be modified")
        if (ospec.get("allocationStrategy") or "sequential") != strategy:
            raise _invalid(
                where,
                "spec.allocationStrategy",
                spec.get("allocationStrategy") or "",
                "cannot be modified after creation",
            )
    # validatePoolRanges
    if spec.get("gateway") is not None:
        _ip_field(spec["gateway"], where, "spec.gateway")
    for j, dns in enumerate(spec.get("dnsServers") or []):
        _ip_field(dns, where, f"spec.dnsServers[{j}]")
    pre = spec.get("preAllocations") or {}
    if not isinstance(pre, dict):
        raise Invalid("preAllocations must be a mapping of claim name to IP", obj=where, field="spec.preAllocations")
    seen = {}
    for claim, value in pre.items():
        field = f"spec.preAllocations.{claim}"
        _ip_field(value, where, field)
        key = _netip(value)
        if key is None:
            continue
        if key in seen:
            raise _invalid(where, field, value, f"IP address is already pre-allocated to claim {_q(seen[key])}")
        seen[key] = claim
    for i, entry in enumerate(pools):
        field = f"spec.pools[{i}]"
        msg = validate_entry(entry)
        if msg:
            raise _invalid(where, field, "", msg)
        if entry.get("gateway") is not None:
            _ip_field(entry["gateway"], where, f"{field}.gateway")
        for j, dns in enumerate(entry.get("dnsServers") or []):
            _ip_field(dns, where, f"{field}.dnsServers[{j}]")
        if strategy == "random":
            try:
                pool_size(entry)
            except ValueError as exc:
                raise _invalid(where, field, "", f'cannot be used with allocationStrategy "random": {exc}') from None
    # checkPoolBonds
    for value in pre.values():
        if not in_bounds(spec, value):
            raise _invalid(where, "spec.preAllocations", value, "is out of bonds of the pools given")
    if old is not None:
        recorded = list(((old.get("status") or {}).get("indexes") or {}).values())
        for address in recorded + [a for a in in_use if a not in recorded]:
            if not in_bounds(spec, address):
                raise _invalid(where, "spec.pools", address, "is in use but out of bonds of the pools given")


def validate_claim(obj: dict, old: dict | None = None) -> None:
    """IPClaim webhook: pool.name required, a valid ipAddress annotation, pool immutable."""
    where = meta.ref(obj)
    pool = (obj.get("spec") or {}).get("pool") or {}
    if not pool.get("name"):
        raise Invalid("pool name is required", obj=where, field="spec.pool.name")
    requested = meta.annotations(obj).get(names.IPADDRESS_ANNOTATION)
    if requested is not None and parse(requested) is None:
        raise Invalid(
            f"invalid IP address {requested!r}", obj=where, field=f"metadata.annotations[{names.IPADDRESS_ANNOTATION}]"
        )
    if old is not None:
        old_pool = (old.get("spec") or {}).get("pool") or {}
        ns = meta.namespace(obj)
        defaults = {"namespace": ns, "kind": ""}
        for key in ("name", "namespace", "kind"):
            if (old_pool.get(key) or defaults.get(key, "")) != (pool.get(key) or defaults.get(key, "")):
                raise Invalid("cannot be modified", obj=where, field=f"spec.pool.{key}")
