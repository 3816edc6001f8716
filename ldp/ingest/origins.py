"""The origins an ingest service lets browsers upload from (``cors_origins`` in ``serve.toml``): each checked to be
written exactly as browsers write an ``Origin`` header, since it is compared byte for byte
(:mod:`ldp.ingest.cors`)."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from ldp.errors import ConfigError

__all__ = ["check_origin", "cors_origins"]

_ORIGIN_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>\[[^\]/?#]*\]|[^/:?#\[\]]*)"
                        r"(?::(?P<port>[^/?#]*))?(?P<rest>.*)\Z", re.S)
_LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _ipv6_text(address: ipaddress.IPv6Address) -> str:
    """An IPv6 address as browsers write it in an origin (WHATWG URL: lowercase hex, the first longest run of two
    or more zero pieces as ``::``, never dotted IPv4)."""
    pieces = [int.from_bytes(address.packed[i:i + 2], "big") for i in range(0, 16, 2)]
    best, start = (0, -1), None
    for i, piece in enumerate([*pieces, 1]):
        if piece == 0 and start is None:
            start = i
        elif piece != 0 and start is not None:
            best = max(best, (i - start, -start))
            start = None
    run, first = best[0], -best[1]
    hexes = [f"{p:x}" for p in pieces]
    if run < 2:
        return ":".join(hexes)
    return ":".join(hexes[:first]) + "::" + ":".join(hexes[first + run:])


def check_origin(origin: str) -> str | None:
    """What is wrong with ``origin`` as an entry of ``cors_origins`` (``None``: nothing). An entry is compared
    byte for byte with the ``Origin`` header, so it must be written as browsers write it: ``http`` or ``https``,
    ``://``, the host in lowercase (ASCII: ``xn--`` for an internationalised name; an IP address in its usual
    form), a port only when not the scheme's default, and nothing after (no path, not even ``/``)."""
    if origin == "null":
        return "is the origin of sandboxed frames and local files, which any site can produce: not allowed"
    m = _ORIGIN_RE.match(origin)
    if m is None or not m["host"] or "@" in m["host"]:
        return "is not an origin: write scheme://host[:port], e.g. 'https://app.example.com'"
    scheme, host, port, rest = m["scheme"].lower(), m["host"], m["port"], m["rest"]
    if scheme not in _DEFAULT_PORTS:
        return f"has the scheme {m['scheme']!r}: an origin here is http:// or https://"
    if port is not None and port.isdigit():
        port = str(int(port))
    canonical = f"{scheme}://{host.lower()}" + (f":{port}" if port and port != _DEFAULT_PORTS[scheme] else "")
    if rest:
        what = "a trailing slash" if rest == "/" else "a path, query or fragment"
        return f"has {what}: an origin is scheme://host[:port] only; write {canonical!r}"
    if not host.isascii():
        return "has a host that is not ASCII: write an internationalised domain name in its xn-- (punycode) form"
    if canonical != origin:
        return (f"is not written as browsers send it (lowercase, no default port, no leading zero); write "
                f"{canonical!r}")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        return f"has the port {port!r}: a port is 1 to 65535"
    if host.startswith("["):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"has the host {host!r}, not an IPv6 address"
        if address.scope_id or f"[{_ipv6_text(address)}]" != host:
            return f"has the IPv6 address {host!r}, which browsers write as '[{_ipv6_text(address)}]'"
        return None
    labels = host.split(".")
    if labels[-1].isdigit() or labels[-1].startswith("0x"):  # browsers read a host ending in a number as IPv4
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return f"has the host {host!r}, which ends in a number but is not an IPv4 address like 192.0.2.1"
        return None
    if len(host) > 253 or not all(_LABEL_RE.match(label) for label in labels):
        return f"has the host {host!r}, not a valid host name"
    return None


def cors_origins(where: str, raw: Any) -> tuple[str, ...]:
    """The ``cors_origins`` entries of a config (at ``where``): a list of origins written as browsers send them, or
    ``"*"`` alone; :class:`~ldp.errors.ConfigError` naming the first wrong one."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(o, str) for o in raw):
        raise ConfigError(f"{where} must be a list of origins such as \"https://app.example.com\", got {raw!r}")
    if "*" in raw and len(raw) > 1:
        raise ConfigError(f"{where}: \"*\" (any origin) must be alone, got {raw!r}")
    for origin in raw:
        if origin != "*" and (problem := check_origin(origin)) is not None:
            raise ConfigError(f"{where}: {origin!r} {problem}")
    return tuple(dict.fromkeys(raw))
