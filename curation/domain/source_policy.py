"""What a tenant-configured source may reach: secret names, hosts, addresses and file paths.

Sources are a trust boundary. A workspace admin configures them, but the worker runs
them with the server's environment, network position and file system, so each one
reaches only what the operator allow-listed. Everything here is pure: callers resolve
host names and symlinks themselves and pass the results (or a resolver) in.
"""

from __future__ import annotations

import functools
import ipaddress
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

from curation.domain.sources import ConnectorKind

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolve = Callable[[str], str]

SLACK_BASE_URL = "https://slack.com/api"
# The config key holding what each kind reaches; HTTP kinds may have a default URL.
HTTP_KINDS: Mapping[ConnectorKind, str | None] = {
    ConnectorKind.CONFLUENCE: None,
    ConnectorKind.JIRA: None,
    ConnectorKind.SLACK: SLACK_BASE_URL,
}
FILE_KINDS: Mapping[ConnectorKind, str] = {
    ConnectorKind.MARKDOWN: "root",
    ConnectorKind.CONVERSATION: "root",
    ConnectorKind.CMDB: "path",
}
REACH_KEYS = ("hosts", "file_roots")

HOSTS_SETTING = "VERA_SOURCES__ALLOWED_HOSTS"
ROOTS_SETTING = "VERA_SOURCES__FILE_ROOTS"
PREFIX_SETTING = "VERA_SOURCES__TOKEN_ENV_PREFIX"
GRANTS_SETTING = "VERA_SOURCES__SECRET_SCOPES"
DENIED_SETTING = "VERA_SOURCES__DENIED_PATHS"

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# NAT64 prefixes (RFC 6052, RFC 8215) carry an IPv4 address in their last 32 bits.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
_CATEGORIES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("unspecified", lambda ip: ip.is_unspecified),
    ("loopback", lambda ip: ip.is_loopback),
    ("link-local", lambda ip: ip.is_link_local),
    ("multicast", lambda ip: ip.is_multicast),
    ("unique-local", lambda ip: ip.version == 6 and ip in _UNIQUE_LOCAL),
    ("site-local", lambda ip: ip.version == 6 and ip.is_site_local),
    ("reserved", lambda ip: ip.is_reserved),
    ("private", lambda ip: ip.is_private),
    # What is left and still not global: shared (CGNAT) space and the like.
    ("non-global", lambda ip: not ip.is_global),
)


@dataclass(frozen=True)
class HostRules:
    """An allow-list parsed: exact names, `*.suffix` patterns, `*` (any name) and CIDR ranges."""

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    any_name: bool = False
    networks: tuple[IPNetwork, ...] = ()


@dataclass(frozen=True)
class SourcePolicy:
    """What sources may reach: the operator's settings, possibly widened for one source."""

    token_env_prefix: str
    allowed_hosts: tuple[str, ...] = ()
    file_roots: tuple[str, ...] = ()
    # Secret variable name -> the group ids it was given to (each reaches its subtree).
    secret_scopes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Paths no source reads even below an allowed root: the servers' state, secrets.
    denied_paths: tuple[str, ...] = ()
    # (host, port) of this server's own services (database, broker, graph...): never
    # reached by a source, whatever the allow-list says.
    denied_endpoints: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        # A typo in the operator's settings fails at once, not on the first source run.
        if not _ENV_NAME.match(self.token_env_prefix):
            raise ValueError(f"{PREFIX_SETTING} must be the start of a variable name, like VERA_")
        object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))
        object.__setattr__(self, "file_roots", tuple(normal_root(r) for r in self.file_roots))
        object.__setattr__(self, "denied_paths", tuple(normal_root(r) for r in self.denied_paths))
        for name in self.secret_scopes:
            if reason := token_env_refusal(name, prefix=self.token_env_prefix):
                raise ValueError(f"{GRANTS_SETTING}: {reason}")
        parse_hosts(self.allowed_hosts)

    @functools.cached_property
    def hosts(self) -> HostRules:
        """The allowed hosts, parsed."""
        return parse_hosts(self.allowed_hosts)

    def widened(self, reach: Mapping[str, Any] | None) -> SourcePolicy:
        """This policy plus what an operator granted one source (`Source.reach`)."""
        hosts, roots = reach_lists(reach)
        return replace(
            self,
            allowed_hosts=_merged(self.allowed_hosts, hosts),
            file_roots=_merged(self.file_roots, roots),
        )


def _merged(first: Iterable[str], second: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*first, *second]))


# --- secrets ------------------------------------------------------------------------------


def token_env_refusal(name: str, *, prefix: str) -> str:
    """Why `name` may not hold a source's secret ("" when it may, or when there is none)."""
    if not name:
        return ""
    if not _ENV_NAME.match(name):
        return f"token_env {name!r} is not an environment variable name"
    if not name.startswith(prefix) or name == prefix:
        # The worker's environment also holds DATABASE_URL and friends: never send those.
        return (
            f"token_env {name!r} is refused: a source's secret must be in an environment "
            f"variable whose name starts with {prefix} (set by the operator in {PREFIX_SETTING})"
            + _section_form_hint(name, prefix)
        )
    return ""


def _section_form_hint(name: str, prefix: str) -> str:
    """`VERA_SOURCE_SECRET_X` under the prefix `VERA_SOURCE_SECRET__`: the old flat form."""
    flat = prefix.removesuffix("__") + "_"
    if prefix.endswith("__") and name.startswith(flat) and len(name) > len(flat):
        return f"; the variable's name is now {prefix}{name.removeprefix(flat)}"
    return ""


def secret_grant_refusal(name: str, lineage: Sequence[str], policy: SourcePolicy) -> str:
    """Why a source in the scope `lineage[0]` may not use the secret `name` ("" if it may).

    `lineage` is the source's group id and its ancestors': a secret the operator gave to
    an organisation serves its workspaces and projects, one given to a workspace serves
    that workspace alone. A secret given to nobody serves nobody (fail closed).
    """
    if not name:
        return ""
    granted = policy.secret_scopes.get(name, ())
    if set(lineage) & set(granted):
        return ""
    where = lineage[0] if lineage else "this scope"
    return (
        f"token_env {name!r} is not given to {where}: the operator grants each source "
        f"secret to the scopes that may use it ({GRANTS_SETTING}, e.g. {name}={where})"
    )


# --- hosts and addresses ------------------------------------------------------------------


def normal_host(host: str) -> str:
    """A host as allow-list entries are compared: lower case, no brackets, no trailing dot."""
    return host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")


def ip_literal(host: str) -> IPAddress | None:
    """The address `host` spells, or None if it is a name."""
    try:
        return ipaddress.ip_address(normal_host(host))
    except ValueError:
        return None


def _host_entry(entry: str) -> str | IPNetwork:
    """One allow-list entry as a name/pattern or a network; ValueError if it is neither."""
    if entry.strip() == "*":
        return "*"
    text = normal_host(entry)
    if "/" in text or ip_literal(text) is not None:
        try:
            return ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(f"{entry!r} is not a valid address range (CIDR)") from None
    labels = text.removeprefix("*.").split(".")
    if not text.isascii() or not all(_LABEL.match(label) for label in labels):
        raise ValueError(
            f"{entry!r} is not a host name, `*.domain` pattern or CIDR range "
            "(write international names in their xn-- form)"
        )
    return text


def parse_hosts(entries: Iterable[str]) -> HostRules:
    """Parse allow-list entries; ValueError naming the first one that is not valid."""
    names: set[str] = set()
    suffixes: list[str] = []
    networks: list[IPNetwork] = []
    any_name = False
    for entry in entries:
        parsed = _host_entry(entry)
        if not isinstance(parsed, str):
            networks.append(parsed)
        elif parsed == "*":
            any_name = True
        elif parsed.startswith("*."):
            suffixes.append(parsed[1:])
        else:
            names.add(parsed)
    return HostRules(frozenset(names), tuple(suffixes), any_name, tuple(networks))


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in prefix for prefix in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _forms(address: IPAddress) -> list[IPAddress]:
    """The address and, first, the IPv4 one it carries: that is where a packet really goes."""
    embedded = embedded_ipv4(address)
    return [address] if embedded is None else [embedded, address]


def address_listed(address: IPAddress, rules: HostRules) -> bool:
    """Whether the address (or the IPv4 one it carries) is inside an allowed range."""
    return any(
        form.version == network.version and form in network
        for form in _forms(address)
        for network in rules.networks
    )


def address_category(address: IPAddress) -> str:
    """The special-purpose space an address is in ("loopback", "private", ...); "" if global."""
    for form in _forms(address):
        for category, test in _CATEGORIES:
            if test(form):
                return category
    return ""


def host_allowed(host: str, rules: HostRules) -> bool:
    """Whether a URL's host is allowed: a listed name or pattern, or an IP inside a range."""
    address = ip_literal(host)
    if address is not None:
        return address_listed(address, rules)
    name = normal_host(host)
    if not name or not name.isascii():
        return False
    if rules.any_name or name in rules.names:
        return True
    return any(name.endswith(suffix) and len(name) > len(suffix) for suffix in rules.suffixes)


def host_refusal(host: str, rules: HostRules) -> str:
    """Why a source may not talk to `host` ("" when it may)."""
    if host_allowed(host, rules):
        return ""
    return (
        f"the host {normal_host(host)!r} is not on the operator's allow-list for sources "
        f"({HOSTS_SETTING}; an operator can widen one source with `manage.py source_reach`)"
    )


def endpoint_refusal(address: str, port: int, denied: Iterable[tuple[str, int]]) -> str:
    """Why a connection may not go to `address`:`port` ("" when it may): it is one of the
    server's own services. `denied` holds addresses (the caller resolves names); one on
    loopback or unspecified denies that port on every loopback address."""
    try:
        ip = ipaddress.ip_address(normal_host(address))
    except ValueError:
        return f"{address!r} is not an IP address"
    forms = _forms(ip)
    for host, denied_port in denied:
        own = ip_literal(host)
        if own is None or port != denied_port:
            continue
        local = own.is_loopback or own.is_unspecified
        if any(form == own or (local and form.is_loopback) for form in forms):
            return (
                f"port {port} of {ip} is one of this server's own services (database, broker, "
                "graph, object store): no source connects there"
            )
    return ""


def address_refusal(host: str, address: str, rules: HostRules) -> str:
    """Why a connection to `host` may not go to the resolved `address` ("" when it may)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"{normal_host(host)!r} resolved to {address!r}, which is not an IP address"
    category = address_category(ip)
    if not category or address_listed(ip, rules):
        return ""
    return (
        f"{normal_host(host)!r} resolves to {ip}, a {category} address: refused unless "
        f"its range is allowed explicitly (a CIDR in {HOSTS_SETTING})"
    )


def url_refusal(url: Any, rules: HostRules) -> str:
    """Why a source may not be pointed at `url` ("" when it may)."""
    if not isinstance(url, str) or not url:
        return "the URL must be a non-empty string"
    if "\\" in url or any(ord(char) <= 32 or ord(char) == 127 for char in url):
        return "the URL must not contain spaces, control characters or backslashes"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range raises here
    except ValueError:
        return "the URL is not valid"
    if parts.scheme not in {"http", "https"}:
        return "the URL must start with http:// or https://"
    if "@" in parts.netloc:
        # Credentials belong in token_env; "user@" is also a classic way to disguise a host.
        return "the URL must not carry credentials (user@host)"
    if not parts.hostname:
        return "the URL has no host"
    return host_refusal(parts.hostname, rules)


# --- files --------------------------------------------------------------------------------


def normal_root(path: str) -> str:
    """An absolute path with `.`, `..` and doubled slashes folded (lexically)."""
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        raise ValueError(f"{path!r} is not an absolute path")
    # POSIX keeps a leading "//"; it means nothing special on Linux.
    return "/" + posixpath.normpath(path).lstrip("/")


def path_within(path: str, root: str) -> bool:
    """Whether absolute `path` is `root` or below it once both are normalised."""
    inner, outer = normal_root(path), normal_root(root)
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def denied_refusal(path: str, denied: Sequence[str], *, resolve: Resolve = normal_root) -> str:
    """Why `path` may not be read even below an allowed root ("" when it may): it is, or
    is inside, one of the servers' state folders or secrets. The message does not say
    which, nor whether it exists."""
    real = resolve(path)
    if any(path_within(real, resolve(place)) for place in denied):
        return (
            f"the path {path!r} is where this server keeps its own state or secrets: no "
            f"source reads there ({DENIED_SETTING} and the built-in list)"
        )
    return ""


def file_refusal(
    path: Any,
    roots: Sequence[str],
    *,
    resolve: Resolve = normal_root,
    denied: Sequence[str] = (),
) -> str:
    """Why a source may not read `path` ("" when, resolved, it lies within an allowed root
    and outside every denied path).

    `resolve` follows symlinks (os.path.realpath) where the caller may touch the disk; it
    is applied to the roots too, so a root that is itself a symlink still works.
    """
    text = str(path) if isinstance(path, str | PurePath) else ""
    if not text.startswith("/") or "\0" in text:
        return f"the path {text or path!r} must be an absolute path"
    if reason := denied_refusal(text, denied, resolve=resolve):
        return reason
    real = resolve(text)
    if any(path_within(real, resolve(root)) for root in roots):
        return ""
    return (
        f"the path {text!r} is outside the folders the operator allows sources to read "
        f"({ROOTS_SETTING}; an operator can widen one source with `manage.py source_reach`)"
    )


# --- sources ------------------------------------------------------------------------------


def source_refusal(
    kind: str, config: Mapping[str, Any], policy: SourcePolicy, *, resolve: Resolve = normal_root
) -> str:
    """Why a source of `kind` configured by `config` reaches beyond `policy` ("" if it does not)."""
    if kind not in ConnectorKind:
        return f"unknown connector kind {kind!r}"
    known = ConnectorKind(kind)
    if known in HTTP_KINDS:
        url = config.get("base_url") or HTTP_KINDS[known]
        reason = url_refusal(url, policy.hosts)
        return f"base_url: {reason}" if reason else ""
    if known in FILE_KINDS:
        key = FILE_KINDS[known]
        reason = file_refusal(
            config.get(key), policy.file_roots, resolve=resolve, denied=policy.denied_paths
        )
        return f"{key}: {reason}" if reason else ""
    # A kind added to ConnectorKind without saying what it reaches is refused, not let through.
    return f"the connector kind {kind!r} has no reach rule (HTTP_KINDS or FILE_KINDS)"


def reach_lists(reach: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """The hosts and file roots of a `Source.reach`; ValueError if it is malformed."""
    if not reach:
        return [], []
    if not isinstance(reach, Mapping) or set(reach) - set(REACH_KEYS):
        raise ValueError(f"the source's reach must be an object with only {REACH_KEYS}")
    lists: list[list[str]] = []
    for key in REACH_KEYS:
        values = reach.get(key, [])
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"the source's reach.{key} must be a list of strings")
        lists.append(values)
    return lists[0], lists[1]


def reach_changed(
    reach: Mapping[str, Any] | None,
    *,
    hosts: Sequence[str] = (),
    file_roots: Sequence[str] = (),
    remove: bool = False,
) -> dict[str, list[str]]:
    """`reach` with the given hosts and roots added (or removed), each entry validated."""
    current_hosts, current_roots = reach_lists(reach)
    parse_hosts(hosts)
    given_hosts = [normal_host(host) for host in hosts]
    given_roots = [normal_root(root) for root in file_roots]
    if remove:
        new_hosts = [host for host in current_hosts if host not in given_hosts]
        new_roots = [root for root in current_roots if root not in given_roots]
    else:
        new_hosts = list(_merged(current_hosts, given_hosts))
        new_roots = list(_merged(current_roots, given_roots))
    changed = {"hosts": new_hosts, "file_roots": new_roots}
    return {key: values for key, values in changed.items() if values}
