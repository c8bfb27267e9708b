"""Which URLs `fetch_url` may reach: the `fetch` setting, the person's answers, and the
address check made on every connection.

The setting is a comma-separated list of keywords and hosts:
- `ask` (the default): the person is asked per host (once / always this host / no);
  with nobody to ask (one-shot without a terminal) every fetch is refused;
- `all`: every public host, without asking;
- `none`: nothing at all;
- hosts such as `docs.python.org,localhost:8000`: fetched without asking; others are
  asked about, or refused when nobody can be asked. A name covers its subdomains and
  every port unless a port is given. `all` may be combined with hosts.
`--yolo` allows every public host whatever the setting says.

Loopback, private, link-local (cloud metadata), unspecified, multicast and reserved
addresses (IPv4 and IPv6, including IPv4 embedded in IPv6) are reached only when the
setting names the host exactly or names the address, under `--yolo` too. The check runs
twice: on the URL before asking anyone (`approve`), and on the addresses a name resolves
to, just before connecting to one of them (`check_addresses`), so a public-looking name
that resolves to 127.0.0.1 is refused, and a redirect is checked like a first request.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from swival.errors import ConfigError
from swival.tools.approval import Approvals, Refusal

KEYWORDS = ("ask", "all", "none")
NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$")
METADATA = frozenset({"169.254.169.254", "fd00:ec2::254"})
NAT64 = ipaddress.ip_network("64:ff9b::/96")
V4_COMPATIBLE = ipaddress.ip_network("::/96")
HOW_TO_ALLOW = ("the user can restart with --fetch all, --yolo, or a list of hosts such as "
                "--fetch docs.python.org,github.com (config key `fetch`)")


class Network(Protocol):
    """How fetch_url reaches hosts (swival/tools/fetch_net.py has the real one; tests
    play public hosts on loopback with their own)."""

    def resolve(self, host: str, port: int, timeout: float) -> list[str]:
        """The addresses `host` resolves to; raises OSError when it does not."""
        ...

    def connect(self, address: str, port: int, timeout: float | None) -> Any:
        """An open httpcore network stream to `address`:`port`."""
        ...


@dataclass(frozen=True)
class HostEntry:
    """One host named in the setting: a lower-case name or an IP address, and a port or
    None for every port."""

    host: str
    port: int | None = None

    def matches(self, host: str, port: int, *, exact: bool) -> bool:
        if self.port is not None and self.port != port:
            return False
        if host == self.host:
            return True
        return not exact and not _is_ip(self.host) and host.endswith("." + self.host)

    def __str__(self) -> str:
        if self.port is None:
            return self.host
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def normalize_host(host: str) -> str:
    """Lower-case ASCII form of a host name or address (IDNA for non-ASCII names)."""
    host = host.strip().rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    return host


def parse_entry(text: str) -> HostEntry:
    """`host`, `host:port`, an IPv4 or IPv6 address, or `[v6]:port`; raises ValueError."""
    if "/" in text or "@" in text:
        raise ValueError("give a host or host:port, not a URL")
    host, port = text, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest:
            port = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, port = text.split(":")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"{port!r} is not a port number")
    try:
        host = normalize_host(host)
    except UnicodeError:
        raise ValueError(f"{host!r} is not a host name") from None
    if not (_is_ip(host) or NAME.match(host)):
        raise ValueError(f"{host!r} is not a host name or address")
    return HostEntry(host, int(port) if port is not None else None)


def parse_setting(value: str) -> tuple[str, tuple[HostEntry, ...]]:
    """The mode ("ask", "all" or "none") and the hosts a `fetch` setting names; raises
    ConfigError saying what a valid setting looks like."""
    items = [item.strip() for item in value.split(",") if item.strip()]
    words = {item.lower() for item in items if item.lower() in KEYWORDS}
    problem = "it is empty" if not items else None
    if "none" in words and len(items) > 1:
        problem = "`none` cannot be combined with anything"
    if "ask" in words and "all" in words:
        problem = "`ask` and `all` contradict each other"
    entries = []
    for item in items:
        if item.lower() in KEYWORDS:
            continue
        try:
            entries.append(parse_entry(item))
        except ValueError as exc:
            problem = f"{item!r}: {exc}"
    if problem:
        raise ConfigError(
            f"fetch: {value!r} is not a valid setting ({problem}). Use ask, all, none, or a "
            "comma-separated list of hosts such as docs.python.org,localhost:8000."
        )
    mode = "none" if "none" in words else "all" if "all" in words else "ask"
    return mode, tuple(entries)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address leads to (mapped, 6to4, Teredo, NAT64, and the
    deprecated IPv4-compatible form)."""
    found = [ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None]
    if ip in NAT64 or (ip in V4_COMPATIBLE and int(ip) > 1):
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [v4 for v4 in found if v4 is not None]


def address_kind(address: str) -> str | None:
    """None for a public address, else what kind of non-public address it is."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "unrecognised"
    if isinstance(ip, ipaddress.IPv6Address):
        for v4 in _embedded_v4(ip):
            kind = address_kind(str(v4))
            if kind or ip.ipv4_mapped:
                return kind
    if str(ip) in METADATA:
        return "cloud metadata (link-local)"
    checks = (("loopback", ip.is_loopback), ("link-local", ip.is_link_local),
              ("unspecified", ip.is_unspecified), ("multicast", ip.is_multicast),
              ("private", ip.is_private), ("reserved", not ip.is_global))
    return next((kind for kind, hit in checks if hit), None)


def literal_kind(host: str) -> str | None:
    """What a URL's host is known to be before any lookup: the kind of a non-public
    address literal, "loopback" for localhost names, else None."""
    if host == "localhost" or host.endswith(".localhost"):
        return "loopback"
    return address_kind(host) if _is_ip(host) else None


def _where(host: str, port: int) -> str:
    return str(HostEntry(host, port))


@dataclass
class FetchPolicy:
    """The fetch policy of one session. `approve` and `check_addresses` return None to
    allow, or the reason for refusing, written for the model to pass on."""

    setting: str = "ask"
    yolo: bool = False
    approvals: Approvals = field(default_factory=Approvals)

    def __post_init__(self) -> None:
        self.mode, self.entries = parse_setting(self.setting)

    @property
    def enabled(self) -> bool:
        """False when no fetch can ever be allowed (then fetch_url is not offered)."""
        return self.yolo or self.mode != "none"

    def named(self, host: str, port: int, *, exact: bool) -> bool:
        return any(entry.matches(host, port, exact=exact) for entry in self.entries)

    def approve(self, url: str, host: str, port: int) -> str | None:
        """Before a request (each redirect hop too): may `url` on `host`:`port` be
        fetched? May ask the person."""
        if self.named(host, port, exact=False):
            return None
        kind = literal_kind(host)
        if kind:
            return self._private(host, port, f"{host} is a {kind} address")
        if self.yolo or self.mode == "all":
            return None
        if self.mode == "none":
            return Refusal(f"fetching URLs is disabled in this session; to allow it, "
                           f"{HOW_TO_ALLOW}.", "not fetched: fetching is disabled (--fetch)")
        answer = self.approvals.ask("fetch", f"Fetch {url}", _where(host, port)
                                    if port not in (80, 443) else host)
        if answer is None:
            listed = ", ".join(map(str, self.entries)) or "none"
            return Refusal(f"{host} is not among the hosts this session may fetch (allowed: "
                           f"{listed}) and nobody is there to approve it; to allow it, the "
                           f"user can restart with --fetch {host} (or --fetch all, or --yolo). "
                           "Continue without it or tell the user what you need.",
                           f"not fetched: {host} is not allowed (--fetch {host} allows it)")
        if answer == "deny":
            return Refusal("the user declined this fetch. Ask them, or continue without it.",
                           "not fetched: you declined")
        return None

    def check_addresses(self, host: str, port: int, addresses: list[str]) -> str | None:
        """Just before connecting: every address `host` resolved to must be public,
        unless the host is named exactly or the address itself is named."""
        if self.named(host, port, exact=True):
            return None
        for address in addresses:
            kind = address_kind(address)
            if kind and not self.named(normalize_host(address), port, exact=True):
                return self._private(host, port, f"{host} resolves to {address}, a {kind} "
                                                 "address")
        return None

    def _private(self, host: str, port: int, what: str) -> str:
        where = _where(host, port)
        return Refusal(f"{what}. Loopback, private and link-local addresses are reached only "
                       f"when the user names them: restart with --fetch {where} (config "
                       "key `fetch`). Do not retry with another spelling of the address.",
                       f"not fetched: {what} (--fetch {where} allows it)")
