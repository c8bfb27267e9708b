"""The fetch policy on its own: the `fetch` setting, which addresses count as non-public,
the person's answers, and what the model is told when a fetch is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from swival.config import load_settings
from swival.errors import ConfigError
from swival.tools.approval import Answer, Approvals
from swival.tools.fetch_policy import FetchPolicy, HostEntry, address_kind, parse_setting

NON_PUBLIC = {
    "127.0.0.1": "loopback", "127.8.9.10": "loopback", "::1": "loopback",
    "0.0.0.0": "unspecified", "::": "unspecified",
    "10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.20": "private",
    "fc00::1": "private", "fd12:3456::1": "private",
    "169.254.169.254": "cloud metadata (link-local)", "fd00:ec2::254":
    "cloud metadata (link-local)", "169.254.1.1": "link-local", "fe80::1": "link-local",
    "fe80::1%eth0": "link-local",
    "::ffff:127.0.0.1": "loopback", "::ffff:10.0.0.1": "private",
    "::ffff:169.254.169.254": "cloud metadata (link-local)",
    "::127.0.0.1": "loopback",  # IPv4-compatible (deprecated) form
    "2002:7f00:1::": "loopback",  # 6to4 around 127.0.0.1
    "64:ff9b::a00:1": "private",  # NAT64 around 10.0.0.1
    "224.0.0.1": "multicast", "ff02::1": "multicast",
    "100.64.0.1": "reserved", "192.0.2.1": "private", "255.255.255.255": "private",
    "not-an-address": "unrecognised",
}
PUBLIC = ["8.8.8.8", "151.101.0.223", "2606:4700::1111", "::ffff:8.8.8.8",
          "2002:808:808::1", "64:ff9b::808:808"]


@pytest.mark.parametrize("address", sorted(NON_PUBLIC))
def test_non_public_addresses_are_recognised(address: str) -> None:
    assert address_kind(address) == NON_PUBLIC[address]


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert address_kind(address) is None


def test_settings_parse_into_a_mode_and_hosts() -> None:
    assert parse_setting("ask") == ("ask", ())
    assert parse_setting("ALL") == ("all", ())
    assert parse_setting("none") == ("none", ())
    mode, hosts = parse_setting("docs.python.org, localhost:8000,[::1]:9000,127.0.0.1,::1")
    assert mode == "ask"
    assert hosts == (HostEntry("docs.python.org"), HostEntry("localhost", 8000),
                     HostEntry("::1", 9000), HostEntry("127.0.0.1"), HostEntry("::1"))
    assert parse_setting("all,localhost:3000") == ("all", (HostEntry("localhost", 3000),))
    assert parse_setting("Bücher.example") == ("ask", (HostEntry("xn--bcher-kva.example"),))


@pytest.mark.parametrize("bad", ["", "none,github.com", "ask,all", "http://localhost:8000",
                                 "localhost:0", "localhost:99999", "bad host", "a:b"])
def test_bad_settings_say_what_a_good_one_looks_like(bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_setting(bad)
    assert "docs.python.org,localhost:8000" in str(caught.value)


def test_a_listed_name_covers_subdomains_and_ports_unless_a_port_is_given() -> None:
    policy = FetchPolicy("github.com,localhost:8000")
    assert policy.approve("https://github.com/x", "github.com", 443) is None
    assert policy.approve("https://api.github.com/x", "api.github.com", 443) is None
    assert policy.approve("http://github.com:8080/", "github.com", 8080) is None
    assert policy.approve("https://notgithub.com/", "notgithub.com", 443) is not None
    assert policy.approve("http://localhost:8000/", "localhost", 8000) is None
    assert policy.approve("http://localhost:8001/", "localhost", 8001) is not None


@pytest.mark.parametrize("setting", ["ask", "all", "none", "github.com"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "app.localhost", "::1",
                                  "169.254.169.254", "10.0.0.5", "0.0.0.0"])
def test_non_public_hosts_are_refused_under_yolo_unless_named(setting: str, host: str) -> None:
    asked: list[str] = []
    approvals = Approvals(
        confirm=lambda action, scopes, detail: asked.append(action) or scopes[0])
    policy = FetchPolicy(setting, yolo=True, approvals=approvals)
    reason = policy.approve(f"http://{host}/", host, 80)
    assert reason is not None and "--fetch" in reason and "names them" in reason
    assert asked == []  # nobody is asked about an address that may not be reached
    named = FetchPolicy(f"[{host}]" if ":" in host else host, yolo=True)
    assert named.approve(f"http://{host}/", host, 80) is None


def test_addresses_are_checked_after_resolution() -> None:
    policy = FetchPolicy("all")
    assert policy.check_addresses("example.org", 443, ["93.184.216.34"]) is None
    reason = policy.check_addresses("evil.example", 80, ["93.184.216.34", "127.0.0.1"])
    assert reason and "evil.example resolves to 127.0.0.1, a loopback address" in reason
    assert "--fetch evil.example:80" in reason
    assert FetchPolicy("all,devbox").check_addresses("devbox", 80, ["192.168.1.9"]) is None
    # A listed name lets its own answer be private; its subdomains do not get that.
    assert FetchPolicy("devbox").check_addresses("x.devbox", 80, ["192.168.1.9"])
    # Naming the address itself allows any name that resolves to it, on that port.
    by_address = FetchPolicy("all,127.0.0.1:8000")
    assert by_address.check_addresses("myapp.test", 8000, ["127.0.0.1"]) is None
    assert by_address.check_addresses("myapp.test", 8001, ["127.0.0.1"])


def scripted(*answers: Answer) -> tuple[Approvals, list[tuple[str, str]]]:
    asked: list[tuple[str, str]] = []
    replies = list(answers)

    def confirm(action: str, scopes: tuple[str, ...], detail: str) -> str:
        asked.append((action, scopes[0]))
        answer = replies.pop(0)
        return scopes[0] if answer == "always" else answer

    return Approvals(confirm=confirm), asked


def test_the_person_answers_once_always_or_no_per_host() -> None:
    approvals, asked = scripted("once", "always", "deny", "deny")
    policy = FetchPolicy("ask", approvals=approvals)
    assert policy.approve("https://a.example/1", "a.example", 443) is None
    assert policy.approve("https://a.example/2", "a.example", 443) is None  # asked again
    assert policy.approve("https://a.example/3", "a.example", 443) is None  # "always" kept
    refusal = policy.approve("https://a.example:8443/", "a.example", 8443)
    assert refusal is not None and "declined" in refusal
    assert policy.approve("https://a.example:8443/", "a.example", 8443) is not None
    assert asked == [("Fetch https://a.example/1", "a.example"),
                     ("Fetch https://a.example/2", "a.example"),
                     ("Fetch https://a.example:8443/", "a.example:8443"),
                     ("Fetch https://a.example:8443/", "a.example:8443")]  # "no" is per fetch


def test_an_always_for_a_host_approves_nothing_else() -> None:
    approvals, asked = scripted("always")
    approvals.granted.add(("mcp", "a.example"))  # another kind of approval, same text
    policy = FetchPolicy("ask", approvals=approvals)
    assert policy.approve("https://b.example/", "b.example", 443) is None
    assert asked == [("Fetch https://b.example/", "b.example")]
    assert ("fetch", "b.example") in approvals.granted


def test_listed_hosts_are_not_asked_about_others_are() -> None:
    approvals, asked = scripted("deny")
    policy = FetchPolicy("docs.python.org", approvals=approvals)
    assert policy.approve("https://docs.python.org/3/", "docs.python.org", 443) is None
    assert policy.approve("https://pypi.org/", "pypi.org", 443) is not None
    assert [scope for _, scope in asked] == ["pypi.org"]


def test_with_nobody_to_ask_the_refusal_says_how_to_allow_the_host() -> None:
    reason = FetchPolicy("docs.python.org").approve("https://pypi.org/x", "pypi.org", 443)
    assert reason is not None
    assert "pypi.org is not among the hosts" in reason and "docs.python.org" in reason
    assert "--fetch pypi.org" in reason and "--yolo" in reason
    disabled = FetchPolicy("none").approve("https://pypi.org/x", "pypi.org", 443)
    assert disabled is not None and "disabled" in disabled and "--fetch all" in disabled


def test_yolo_and_all_allow_every_public_host_without_asking() -> None:
    approvals, asked = scripted()
    for policy in (FetchPolicy("ask", yolo=True, approvals=approvals),
                   FetchPolicy("none", yolo=True, approvals=approvals),
                   FetchPolicy("all", approvals=approvals)):
        assert policy.enabled
        assert policy.approve("https://pypi.org/", "pypi.org", 443) is None
    assert asked == []
    assert not FetchPolicy("none").enabled


@pytest.mark.parametrize(("written", "untrusted", "trusted"), [
    ('"all"', "ask", "all"), ('"localhost:8000"', "ask", "localhost:8000"),
    ('"none"', "none", "none"),  # narrowing needs no trust
])
def test_a_project_file_widens_fetching_only_when_trusted(tmp_path: Path, written: str,
                                                          untrusted: str, trusted: str) -> None:
    (tmp_path / "swival.toml").write_text(f"fetch = {written}\n")
    assert load_settings({}, cwd=tmp_path, env={}).fetch == untrusted
    assert load_settings({}, cwd=tmp_path, env={}, trusted=lambda *_: True).fetch == trusted
