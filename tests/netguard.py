"""Refuse every non-loopback connection and DNS lookup in this process, and record each try.

    from tests import netguard
    netguard.install()
    ...run the code under test...
    assert netguard.ATTEMPTS == []

For child processes that must prove they stay on the machine (tests/test_providers_offline.py,
tests/hosted_child.py): a refused connection raises OSError, as a machine without a network
would, and its address is kept in `ATTEMPTS`. Loopback addresses and `localhost` pass.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

ATTEMPTS: list[str] = []


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def install() -> None:
    """Guard `socket.socket.connect` and `socket.getaddrinfo` (once per process)."""
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and not _loopback(str(address[0])):
            ATTEMPTS.append(str(address))
            raise OSError("blocked by the test's network guard")
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback(str(host)):
            ATTEMPTS.append(f"dns:{host}")
            raise socket.gaierror("blocked by the test's network guard")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
