"""Who counts as one client for the per-client limits (page sockets in annotate/web/guard.py,
new Prolific participants in annotate/people/prolific.py): a network prefix, not an exact
address. An IPv6 host is usually given a whole /64 and picks addresses in it at will, so one
machine would get every limit once per address; an IPv4 address is counted alone (/32), as a
household or office behind one NAT address already shares it. docs/security.md says the
trade-off.
"""

from __future__ import annotations

import ipaddress

IPV4_PREFIX = 32
IPV6_PREFIX = 64


def client_key(address: object) -> str:
    """The key the per-client limits count `address` under: its IPv6 /64 or IPv4 /32 network
    (an IPv4 address mapped into IPv6 counts as that IPv4 address). Something that is not an
    IP address counts as itself (a test's mock address); no address at all (a server on a Unix
    socket) counts as "unknown", which its visitors share."""
    if address is None or address == "":
        return "unknown"
    text = str(address).strip()
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = IPV4_PREFIX if ip.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))
