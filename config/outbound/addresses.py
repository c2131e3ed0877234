"""Which addresses a webhook may reach: globally routable ones, embedded IPv4 forms unwrapped. Pure.

`ipaddress.is_global` alone lets through shared address space, 6to4 relays, site-local IPv6,
multicast and every IPv6 form that carries an IPv4 address inside (6to4, NAT64, mapped, Teredo),
so the networks below are named one by one and embedded IPv4 addresses are judged as themselves.
BERTH_WEBHOOKS_ALLOW_PRIVATE=1 lets loopback, RFC 1918 and unique-local (fc00::/7) through, and
nothing else: link-local and cloud metadata addresses stay refused.
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

SETTING = "BERTH_WEBHOOKS_ALLOW_PRIVATE=1"
Address = IPv4Address | IPv6Address

# Cloud metadata and platform services: AWS, GCP, Azure, Oracle (169.254.169.254), AWS over IPv6,
# ECS task metadata, Alibaba (100.100.100.200), Azure's wire server (a public-looking address).
METADATA = frozenset(
    ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "fd00:ec2::254",
        "100.100.100.200",
        "168.63.129.16",
        "192.0.0.192",
    )
)
# What the private setting lets through, besides nothing.
PRIVATE = tuple(
    (ip_network(n), kind)
    for n, kind in (
        ("127.0.0.0/8", "a loopback address"),
        ("10.0.0.0/8", "a private (RFC 1918) address"),
        ("172.16.0.0/12", "a private (RFC 1918) address"),
        ("192.168.0.0/16", "a private (RFC 1918) address"),
        ("::1/128", "a loopback address"),
        ("fc00::/7", "a unique-local (fc00::/7) address"),
    )
)
# Never a target. Checked after PRIVATE is ruled out, before is_global (which misses several).
NEVER = tuple(
    (ip_network(n), kind)
    for n, kind in (
        ("169.254.0.0/16", "a link-local address"),
        ("fe80::/10", "a link-local address"),
        ("0.0.0.0/8", "a 'this network' address"),
        ("100.64.0.0/10", "a shared (carrier-grade NAT, 100.64.0.0/10) address"),
        ("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.88.99.0/24", "a 6to4 relay anycast address (192.88.99.0/24)"),
        ("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved (240.0.0.0/4) or broadcast address"),
        ("::/128", "the unspecified address"),
        ("::/96", "an IPv4-compatible address (deprecated)"),
        ("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)"),
        ("100::/64", "a discard-only address"),
        ("2001::/32", "a Teredo address"),
        ("2001::/23", "an IETF protocol assignment (2001::/23)"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("5f00::/16", "a segment-routing address (5f00::/16)"),
        ("fec0::/10", "a site-local address (fec0::/10)"),
        ("ff00::/8", "a multicast address"),
    )
)
NAT64 = ip_network("64:ff9b::/96")
# SIIT's IPv4-translated addresses (RFC 2765, ::ffff:0:a.b.c.d), which Python calls global.
TRANSLATED = ip_network("::ffff:0:0:0/96")
# IETF-reserved; holds every IPv4-in-IPv6 form but NAT64's well-known prefix (judged above).
RESERVED = ip_network("::/8")


def embedded(ip: Address) -> tuple[IPv4Address, str] | None:
    """Return the IPv4 address an IPv6 address carries and its form, or None."""
    if not isinstance(ip, IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    if ip.teredo is not None:
        return ip.teredo[1], "Teredo"  # the client's address: the last 32 bits, inverted
    if ip in NAT64:
        return IPv4Address(int(ip) & 0xFFFF_FFFF), "NAT64"
    if ip in TRANSLATED:
        return IPv4Address(int(ip) & 0xFFFF_FFFF), "IPv4-translated"
    return None


def refusal(address: str, *, allow_private: bool) -> str | None:
    """Return why a webhook may not go to `address` ("a link-local address …"), or None."""
    try:
        ip: Address = ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    inner = embedded(ip)
    if inner is not None:
        v4, form = inner
        if form == "IPv4-mapped":
            return refusal(str(v4), allow_private=allow_private)  # it is that IPv4 address
        said = refusal(str(v4), allow_private=False)
        if said is not None:
            article = "an" if form[0] in "AEIOU" else "a"
            return f"{article} {form} form of {v4}, {said.split(': ', 1)[0]}: {_never()}"
    if ip in METADATA:
        return f"a cloud metadata address: {_never()}"
    for network, kind in PRIVATE:
        if ip in network:
            return None if allow_private else f"{kind}: refused unless {SETTING} is set"
    for network, kind in NEVER:
        if ip in network:
            return f"{kind}: {_never()}"
    if ip in RESERVED and ip not in NAT64:
        return f"a reserved address (::/8): {_never()}"
    if not ip.is_global:
        return f"not a globally routable address: {_never()}"
    return None


def _never() -> str:
    return f"never a webhook target, not even with {SETTING}"


def is_literal(host: str) -> bool:
    """Return whether `host` is an IP address rather than a name."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True
