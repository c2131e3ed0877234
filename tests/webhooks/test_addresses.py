"""Where a webhook may go: every address that is not globally routable is refused, embedded IPv4
forms judged as the address they carry; the private setting opens loopback, RFC 1918 and ULA only."""

import pytest

from capacity.placement import CapacityError
from config.outbound.addresses import refusal
from webhooks import services as hooks

ALWAYS = "never a webhook target, not even with BERTH_WEBHOOKS_ALLOW_PRIVATE=1"
UNLESS = "refused unless BERTH_WEBHOOKS_ALLOW_PRIVATE=1 is set"

# (address, refused without the setting: what it says, with the setting: what it says or None)
TABLE = [
    # what the setting lets through
    ("127.0.0.1", f"a loopback address: {UNLESS}", None),
    ("10.1.2.3", f"a private (RFC 1918) address: {UNLESS}", None),
    ("172.16.0.1", f"a private (RFC 1918) address: {UNLESS}", None),
    ("192.168.1.1", f"a private (RFC 1918) address: {UNLESS}", None),
    ("::1", f"a loopback address: {UNLESS}", None),
    ("fd12:3456::1", f"a unique-local (fc00::/7) address: {UNLESS}", None),
    ("::ffff:10.0.0.1", f"a private (RFC 1918) address: {UNLESS}", None),  # IPv4-mapped: itself
    # never, setting or not
    ("169.254.169.254", f"a cloud metadata address: {ALWAYS}", ...),
    ("100.100.100.200", f"a cloud metadata address: {ALWAYS}", ...),
    ("fd00:ec2::254", f"a cloud metadata address: {ALWAYS}", ...),
    ("169.254.1.1", f"a link-local address: {ALWAYS}", ...),
    ("fe80::1", f"a link-local address: {ALWAYS}", ...),
    ("100.64.0.1", f"a shared (carrier-grade NAT, 100.64.0.0/10) address: {ALWAYS}", ...),
    ("100.127.255.254", f"a shared (carrier-grade NAT, 100.64.0.0/10) address: {ALWAYS}", ...),
    ("192.88.99.1", f"a 6to4 relay anycast address (192.88.99.0/24): {ALWAYS}", ...),
    ("198.18.0.1", f"a benchmarking address (198.18.0.0/15): {ALWAYS}", ...),
    ("198.19.255.1", f"a benchmarking address (198.18.0.0/15): {ALWAYS}", ...),
    ("192.0.0.9", f"an IETF protocol assignment (192.0.0.0/24): {ALWAYS}", ...),
    ("240.0.0.1", f"a reserved (240.0.0.0/4) or broadcast address: {ALWAYS}", ...),
    ("255.255.255.255", f"a reserved (240.0.0.0/4) or broadcast address: {ALWAYS}", ...),
    ("0.0.0.0", f"a 'this network' address: {ALWAYS}", ...),
    ("224.0.0.1", f"a multicast address: {ALWAYS}", ...),
    ("192.0.2.1", f"a documentation address: {ALWAYS}", ...),
    ("fec0::1", f"a site-local address (fec0::/10): {ALWAYS}", ...),
    ("ff02::1", f"a multicast address: {ALWAYS}", ...),
    ("::", f"the unspecified address: {ALWAYS}", ...),
    ("2001:db8::1", f"a documentation address: {ALWAYS}", ...),
    ("64:ff9b:1::a00:1", f"a local-use NAT64 address (64:ff9b:1::/48): {ALWAYS}", ...),
    # embedded IPv4: judged as the address inside, and never opened by the setting
    ("::ffff:169.254.169.254", f"a cloud metadata address: {ALWAYS}", ...),
    ("::ffff:100.64.0.1", f"a shared (carrier-grade NAT, 100.64.0.0/10) address: {ALWAYS}", ...),
    ("2002:7f00:1::", f"a 6to4 form of 127.0.0.1, a loopback address: {ALWAYS}", ...),
    ("2002:a9fe:a9fe::1", f"a 6to4 form of 169.254.169.254, a cloud metadata address: {ALWAYS}", ...),
    ("2002:a00:1::", f"a 6to4 form of 10.0.0.1, a private (RFC 1918) address: {ALWAYS}", ...),
    ("64:ff9b::7f00:1", f"a NAT64 form of 127.0.0.1, a loopback address: {ALWAYS}", ...),
    ("64:ff9b::a9fe:a9fe", f"a NAT64 form of 169.254.169.254, a cloud metadata address: {ALWAYS}", ...),
    (
        "64:ff9b::6440:1",
        f"a NAT64 form of 100.64.0.1, a shared (carrier-grade NAT, 100.64.0.0/10) address: {ALWAYS}",
        ...,
    ),
    # Teredo: the client's IPv4 is the last 32 bits inverted (here 127.0.0.1, 169.254.169.254, 8.8.8.8)
    ("2001:0:4136:e378::80ff:fffe", f"a Teredo form of 127.0.0.1, a loopback address: {ALWAYS}", ...),
    (
        "2001:0:4136:e378::5601:5601",
        f"a Teredo form of 169.254.169.254, a cloud metadata address: {ALWAYS}",
        ...,
    ),
    ("2001:0:4136:e378::f7f7:f7f7", f"a Teredo address: {ALWAYS}", ...),
    ("::a9fe:a9fe", f"an IPv4-compatible address (deprecated): {ALWAYS}", ...),
    # IPv4-translated (SIIT, ::ffff:0:0:0/96): judged as the address inside; the rest of ::/8 never
    (
        "::ffff:0:169.254.169.254",
        f"an IPv4-translated form of 169.254.169.254, a cloud metadata address: {ALWAYS}",
        ...,
    ),
    (
        "::ffff:0:10.0.0.1",
        f"an IPv4-translated form of 10.0.0.1, a private (RFC 1918) address: {ALWAYS}",
        ...,
    ),
    ("::ffff:0:8.8.8.8", f"a reserved address (::/8): {ALWAYS}", ...),
    ("::ffff:0:0:7f00:1", f"a reserved address (::/8): {ALWAYS}", ...),
    ("0:ff::1", f"a reserved address (::/8): {ALWAYS}", ...),
    # globally routable: allowed either way
    ("8.8.8.8", None, None),
    ("2606:4700:4700::1111", None, None),
    ("::ffff:8.8.8.8", None, None),
    ("2002:808:808::1", None, None),
    ("64:ff9b::808:808", None, None),
]


@pytest.mark.parametrize(("address", "without", "with_setting"), TABLE, ids=[row[0] for row in TABLE])
def test_every_address_that_is_not_globally_routable_is_refused_embedded_forms_included(
    address, without, with_setting
):
    assert refusal(address, allow_private=False) == without
    assert refusal(address, allow_private=True) == (without if with_setting is ... else with_setting)


def test_a_refused_subscription_names_the_setting_and_a_metadata_address_stays_refused_with_it(
    people, monkeypatch
):
    alice, _bob, _ops = people
    for url, allowed in [
        ("http://127.0.0.1:8080/x", True),
        ("http://[fd12::1]/x", True),
        ("http://169.254.169.254/latest/meta-data", False),
        ("http://[fe80::1]/x", False),
        ("http://[2002:7f00:1::]/x", False),
        ("http://100.100.100.200/x", False),
        ("http://[::ffff:0:169.254.169.254]/x", False),
        ("http://[::ffff:0:10.0.0.1]/x", False),
        ("http://[::ffff:0:0:7f00:1]/x", False),
    ]:
        monkeypatch.delenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", raising=False)
        with pytest.raises(CapacityError) as refused:
            hooks.subscribe(alice, {"url": url, "events": ["reservation.placed"]})
        assert (
            refused.value.code == "INVALID_INPUT"
            and "BERTH_WEBHOOKS_ALLOW_PRIVATE=1" in refused.value.message
        )
        monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
        if allowed:
            hooks.subscribe(alice, {"url": url, "events": ["reservation.placed"]})
        else:
            with pytest.raises(CapacityError, match="not even with BERTH_WEBHOOKS_ALLOW_PRIVATE=1"):
                hooks.subscribe(alice, {"url": url, "events": ["reservation.placed"]})
