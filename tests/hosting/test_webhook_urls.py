"""The webhook URL checks (hosting.webhooks._urls): the allowlist's entries, the URL's scheme,
user info, port and host, and the addresses a host may resolve to."""

from __future__ import annotations

import asyncio

import pytest

from hosting.webhooks._deliver import classify, signature
from hosting.webhooks._urls import (
    HOSTS_ENV,
    Allowed,
    Target,
    WebhookRefused,
    address_allowed,
    allowed_hosts,
    check_url,
    resolve,
)

LIST = "hooks.example.com, 127.0.0.1:8080, [::1]:9000, [2001:db8::1], api.example.org:8443"
HOSTS = allowed_hosts({HOSTS_ENV: LIST})


def refused(url: str) -> str:
    with pytest.raises(WebhookRefused) as caught:
        check_url(url, HOSTS)
    return str(caught.value)


def test_unset_or_empty_allowlist_refuses_everything_naming_the_setting() -> None:
    assert allowed_hosts({}) is None and allowed_hosts({HOSTS_ENV: " , "}) is None
    with pytest.raises(WebhookRefused, match=HOSTS_ENV):
        check_url("https://hooks.example.com/x", None)


@pytest.mark.parametrize("entry", ["a:b", "a:0", "a:70000", "::1", "[::1", "[nothost]:80", "a/b", "u@a"])
def test_a_malformed_entry_is_named(entry: str) -> None:
    with pytest.raises(WebhookRefused, match="is not host"):
        allowed_hosts({HOSTS_ENV: entry})


def test_allowed_urls() -> None:
    assert check_url("https://hooks.example.com/x?a=1", HOSTS).port == 443
    assert check_url("https://HOOKS.example.com./x", HOSTS).host == "hooks.example.com"
    assert check_url("http://127.0.0.1:8080/x", HOSTS).entry == Allowed("127.0.0.1", 8080)
    assert check_url("http://[::1]:9000/x", HOSTS).host == "::1"
    assert check_url("https://api.example.org:8443/", HOSTS).port == 8443


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://evil.example.com/x", "not in the app setting"),
        ("https://hooks.example.com:444/x", "hooks.example.com:444 is not in"),  # an odd port
        ("https://api.example.org/x", "api.example.org:443 is not in"),  # the entry names 8443
        ("http://hooks.example.com/x", "must be https"),
        ("https://user@hooks.example.com/x", "user name"),
        ("https://user:pw@hooks.example.com/x", "user name"),
        ("https://hooks.example.com@evil.example.com/x", "user name"),
        ("ftp://hooks.example.com/x", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("https:///x", "not valid"),
        ("https://hooks.example.com:99999/x", "not valid"),
        ("https://hooks.example.com:80a/x", "not valid"),
        ("https://hooks.exämple.com/x", "ASCII"),
        ("https://hooks.example.com/a b", "ASCII"),
        ("https://127.0.0.1/x", "not in the app setting"),  # loopback, not on 443
        ("http://127.0.0.1:8081/x", "not in the app setting"),
        ("https://[::1]/x", "not in the app setting"),
        ("https://" + "a" * 2100 + ".com/", "at most 2048"),
    ],
)
def test_refused_urls(url: str, why: str) -> None:
    assert why in refused(url)


def test_a_private_literal_is_refused_unless_the_entry_names_it() -> None:
    hosts = allowed_hosts({HOSTS_ENV: "10.0.0.5, 169.254.169.254"})
    assert check_url("https://10.0.0.5/x", hosts).host == "10.0.0.5"
    assert check_url("https://169.254.169.254/x", hosts).entry.address is not None


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
        "::1", "fe80::1", "fc00::1", "fd12::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1", "::",
        "fe80::1%eth0", "not-an-address",
    ],
)
def test_private_loopback_and_link_local_addresses_are_refused_for_a_name(address: str) -> None:
    assert not address_allowed(address, Allowed("hooks.example.com", None))


def test_public_addresses_and_the_entry_own_address_are_allowed() -> None:
    assert address_allowed("93.184.216.34", Allowed("hooks.example.com", None))
    assert address_allowed("2606:2800:220:1:248:1893:25c8:1946", Allowed("hooks.example.com", None))
    assert address_allowed("127.0.0.1", Allowed("127.0.0.1", 8080))
    assert address_allowed("::1", Allowed("::1", 9000))
    assert not address_allowed("127.0.0.2", Allowed("127.0.0.1", 8080))


def test_a_name_resolving_to_loopback_is_refused_at_delivery() -> None:
    # `localhost` resolves to loopback: named in the allowlist, its addresses are still refused
    # (only an entry naming the address itself allows one).
    hosts = allowed_hosts({HOSTS_ENV: "localhost:8080"})
    target = check_url("http://localhost:8080/x", hosts)
    with pytest.raises(WebhookRefused, match="loopback"):
        asyncio.run(resolve(target))


def test_the_entry_own_loopback_address_resolves_pinned() -> None:
    target = Target("http://127.0.0.1:8080/x", "http", "127.0.0.1", 8080, Allowed("127.0.0.1", 8080))
    hosts = asyncio.run(resolve(target))
    assert [h["host"] for h in hosts] == ["127.0.0.1"] and hosts[0]["hostname"] == "127.0.0.1"


def test_answers_are_classified() -> None:
    assert [classify(s) for s in (200, 204, 302, 400, 404, 408, 410, 429, 500, 503)] == [
        "delivered", "delivered", "failed", "failed", "failed", "retry", "failed", "retry", "retry", "retry",
    ]


def test_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"s", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert signature(b"s", "1700000000", b"{}") == f"v1={expected}"
