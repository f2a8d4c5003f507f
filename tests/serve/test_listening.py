"""What ``lorelab serve`` prints at start: where it really listens, not only a loopback URL."""

from lorelab.serve._run import ServeOptions, _listening


def test_a_wildcard_bind_says_it_listens_on_every_address_and_the_local_url():
    line = _listening(ServeOptions(None, None, host="0.0.0.0"), 8765)
    assert line.startswith("listening on every IPv4 address (0.0.0.0:8765)")
    assert line.endswith("on this machine http://127.0.0.1:8765/mcp")


def test_an_ipv6_wildcard_bind_says_so():
    assert "every IPv6 address ([::]:8765)" in _listening(ServeOptions(None, None, host="::"), 8765)


def test_a_loopback_bind_prints_its_url():
    assert (
        _listening(ServeOptions(None, None, host="127.0.0.1"), 8765) == "http://127.0.0.1:8765/mcp"
    )
