"""Which URLs a webhook may call: the hosts the app setting `DURABLE_AGENTS_WEBHOOK_HOSTS`
names, over https (plain http only where the entry names its port), and never an address of the
app's own network unless the entry names that address itself.

Checked twice: when the run is requested (the URL and its host, no DNS), and before every attempt
(the host's addresses after DNS resolution, which the connection then uses as resolved: a name
that resolves to a public address when asked and to a private one a moment later is never
called at the private one).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp.abc import ResolveResult

from .._settings import WEBHOOK_HOSTS_ENV

HOSTS_ENV = WEBHOOK_HOSTS_ENV
MAX_URL_CHARS = 2048
_DEFAULT_PORTS = {"https": 443, "http": 80}


class WebhookRefused(Exception):
    """A webhook URL the app will not call; the message says why."""


@dataclass(frozen=True)
class Allowed:
    """One entry of the allowlist: `host` (lower case, IPv6 without brackets) and its port, None
    for the https default only."""

    host: str
    port: int | None

    @property
    def address(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        """The entry's host when it is an IP address (such an entry may be a private one)."""
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None


@dataclass(frozen=True)
class Target:
    """A checked URL: where it goes and the allowlist entry that lets it."""

    url: str
    scheme: str
    host: str
    port: int
    entry: Allowed


def _split_host_port(text: str) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]` or `[v6]:port` -> (host, port); ValueError when malformed."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError("unclosed '['")
        host, rest = text[1:end], text[end + 1 :]
        ipaddress.IPv6Address(host)  # brackets hold an IPv6 address only
    elif text.count(":") > 1:
        raise ValueError("an IPv6 address must be in brackets")
    else:
        host, _, port_text = text.partition(":")
        rest = f":{port_text}" if _ else ""
    port: int | None = None
    if rest:
        if not rest.startswith(":") or not rest[1:].isascii() or not rest[1:].isdigit():
            raise ValueError("the port must be digits")
        port = int(rest[1:])
        if not 0 < port < 65536:
            raise ValueError("the port must be from 1 to 65535")
    if not host or any(c in host for c in "/@?#\\ "):
        raise ValueError("no host")
    return host.lower().rstrip("."), port


def allowed_hosts(environ: Mapping[str, str]) -> tuple[Allowed, ...] | None:
    """The allowlist, or None when the setting is unset (then no webhook is accepted). A
    malformed entry raises `WebhookRefused` naming it."""
    raw = environ.get(HOSTS_ENV, "").strip()
    if not raw:
        return None
    entries = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            host, port = _split_host_port(part)
        except ValueError as error:
            raise WebhookRefused(f"{HOSTS_ENV} entry {part!r} is not host[:port]: {error}") from None
        entries.append(Allowed(host, port))
    return tuple(entries) or None


def check_url(url: str, allowed: tuple[Allowed, ...] | None) -> Target:
    """The URL as a `Target`, or `WebhookRefused` saying why it may not be called (no DNS here)."""
    if allowed is None:
        raise WebhookRefused(f"webhooks are off: the app setting {HOSTS_ENV} names no host")
    if len(url) > MAX_URL_CHARS or not url.isascii() or any(c.isspace() or ord(c) < 32 for c in url):
        raise WebhookRefused(f"the URL must be ASCII without spaces, at most {MAX_URL_CHARS} characters")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise WebhookRefused("the URL must be http or https")
    if "@" in parts.netloc:
        raise WebhookRefused("the URL must not carry a user name or password")
    try:
        host, port = _split_host_port(parts.netloc)
    except ValueError as error:
        raise WebhookRefused(f"the URL's host is not valid: {error}") from None
    effective = port or _DEFAULT_PORTS[scheme]
    entry = next((a for a in allowed if a.host == host and (a.port or 443) == effective), None)
    if entry is None and scheme == "http" and any(a.host == host and a.port is None for a in allowed):
        raise WebhookRefused(f"the URL must be https (plain http needs the port named in {HOSTS_ENV})")
    if entry is None:
        shown = f"[{host}]" if ":" in host else host
        raise WebhookRefused(f"the host {shown}:{effective} is not in the app setting {HOSTS_ENV}")
    if scheme == "http" and entry.port is None:
        raise WebhookRefused(f"the URL must be https (plain http needs the port named in {HOSTS_ENV})")
    literal = _literal(host)
    if literal is not None and not literal.is_global and entry.address != literal:
        raise WebhookRefused("the URL names a private, loopback or link-local address")
    return Target(url, scheme, host, effective, entry)


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def address_allowed(address: str, entry: Allowed) -> bool:
    """Whether a resolved address may be called for `entry`: a public one, or the very address
    the entry names (`127.0.0.1:8080` in the allowlist lets that loopback address be called)."""
    checked = _literal(address.split("%", 1)[0])
    if checked is None:
        return False
    if entry.address is not None and _literal(str(entry.address)) == checked:
        return True
    return checked.is_global and not checked.is_multicast


async def resolve(target: Target) -> list[ResolveResult]:
    """The target's addresses, each checked (`address_allowed`), in aiohttp's resolver form;
    `WebhookRefused` when any is not allowed (all must be: the connection may use any)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise ConnectionError(f"cannot resolve {target.host}: {error}") from error
    hosts: list[ResolveResult] = []
    for family, _, proto, _, sockaddr in infos:
        address = str(sockaddr[0])
        if not address_allowed(address, target.entry):
            raise WebhookRefused(
                f"{target.host} resolves to {address}, a private, loopback or link-local address"
            )
        hosts.append({
            "hostname": target.host, "host": address, "port": target.port,
            "family": family, "proto": proto, "flags": socket.AI_NUMERICHOST,
        })
    if not hosts:
        raise ConnectionError(f"{target.host} has no address")
    return hosts
