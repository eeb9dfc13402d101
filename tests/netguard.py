"""A connect recorder that lets a test process reach loopback only (R-13.5's tests).

The address tests point the gateway at 169.254.169.254 and its disguises. This machine must never
send traffic there, nor look names up at its DNS server, whatever the code under test does (the
attack tests also run against the commit before the fix, which does call those addresses). So,
while the guard is on:

- every TCP connect is recorded; one to a non-loopback address fails at once with
  ``ConnectionRefusedError``, before the real ``connect``;
- ``getaddrinfo`` answers only ``localhost`` (from /etc/hosts) and numeric hosts (read with
  ``AI_NUMERICHOST``, so ``2852039166`` still means 169.254.169.254); any other name is recorded
  and fails as unknown, without a query.

``run_cli`` is the ``toolcrib`` command line with the guard on, for a subprocess; it appends what
it recorded to the file named by ``TOOLCRIB_TEST_CONNECT_LOG``.
"""

from __future__ import annotations

import ipaddress
import os
import runpy
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

_REAL_CONNECT = socket.socket.connect
_REAL_CONNECT_EX = socket.socket.connect_ex
_REAL_GETADDRINFO = socket.getaddrinfo
LOG_ENV = "TOOLCRIB_TEST_CONNECT_LOG"


@dataclass
class Recorder:
    """What the process tried while the guard was on."""

    connects: list[str] = field(default_factory=list)
    """Every TCP connect attempted, as its IP address."""
    lookups: list[str] = field(default_factory=list)
    """Names refused a lookup (they would have gone to the DNS server)."""

    def outside_loopback(self) -> list[str]:
        return [a for a in self.connects if not _loopback(a)]


def _loopback(host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def _note(line: str) -> None:
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


@contextmanager
def loopback_only() -> Iterator[Recorder]:
    """The guard, on for the ``with`` block."""
    recorder = Recorder()

    def check(address: Any) -> None:
        if isinstance(address, tuple) and address and isinstance(address[0], str):
            recorder.connects.append(address[0])
            _note(f"connect {address[0]}")
            if not _loopback(address[0]):
                raise ConnectionRefusedError(f"test guard: no traffic to {address[0]}")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        _REAL_CONNECT(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return _REAL_CONNECT_EX(self, address)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is None or name == "localhost":
            return _REAL_GETADDRINFO(host, port, *args, **kwargs)
        family, kind, proto, flags = [*args, 0, 0, 0, 0][:4]
        flags = kwargs.get("flags", flags) | socket.AI_NUMERICHOST
        try:
            return _REAL_GETADDRINFO(
                host,
                port,
                kwargs.get("family", family),
                kwargs.get("type", kind),
                kwargs.get("proto", proto),
                flags,
            )
        except socket.gaierror:
            recorder.lookups.append(str(name))
            _note(f"lookup {name}")
            raise

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo
    try:
        yield recorder
    finally:
        socket.socket.connect = _REAL_CONNECT  # type: ignore[method-assign]
        socket.socket.connect_ex = _REAL_CONNECT_EX  # type: ignore[method-assign]
        socket.getaddrinfo = _REAL_GETADDRINFO


def run_cli() -> None:
    """``python -c 'from tests.netguard import run_cli; run_cli()' ARGS``: the CLI, guarded."""
    with loopback_only():
        runpy.run_module("toolcrib.cli", run_name="__main__", alter_sys=True)
