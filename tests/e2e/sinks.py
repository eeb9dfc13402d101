"""Real receivers of the audit stream (R-11.4) for the tests: a webhook and a syslog TCP server.

Each runs in a thread of its own on a loopback port, so it serves a gateway in the test's event
loop and a gateway subprocess alike. The webhook checks every body's HMAC signature itself and can
refuse its first deliveries (503) or be down (its port closed); the syslog server parses RFC 6587
octet-counted frames and the RFC 5424 header of each message.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import socketserver
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.conftest import free_port

__all__ = ["SyslogReceiver", "WebhookReceiver", "wait_until"]


def wait_until(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition`` until it holds, at most ``timeout`` seconds (then fail naming ``what``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.02)


class WebhookReceiver:
    """POSTs of JSON arrays of events; the first ``fail_first`` answer 503."""

    def __init__(self, *, secret: str | None = None, fail_first: int = 0, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/audit"
        self.secret = secret
        self.fail_first = fail_first
        self.requests = 0
        self.refused = 0
        self.bad_signatures = 0
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status = receiver._take(body, self.headers.get("X-Toolcrib-Signature"))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def _take(self, body: bytes, signed: str | None) -> int:
        with self._lock:
            self.requests += 1
            if self.secret is not None:
                expected = "sha256=" + hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
                if signed is None or not hmac.compare_digest(signed, expected):
                    self.bad_signatures += 1
                    return 401
            if self.refused < self.fail_first:
                self.refused += 1
                return 503
            self.events.extend(json.loads(body))
            return 200

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def ids(self) -> Counter[str]:
        with self._lock:
            return Counter(e["id"] for e in self.events)

    def audit_ids(self) -> set[int]:
        with self._lock:
            return {e["unmapped"]["audit_id"] for e in self.events}


_RFC5424 = re.compile(
    rb"<(?P<pri>\d{1,3})>1 (?P<time>\S+) (?P<host>\S+) (?P<app>\S+) (?P<pid>\S+) (?P<msgid>\S+)"
    rb" (?P<sd>-|\[.*?\]) (?P<msg>.*)",
    re.DOTALL,
)


class SyslogReceiver:
    """RFC 5424 messages over TCP, octet-counted (RFC 6587): ``messages`` holds the parsed ones."""

    def __init__(self) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.messages: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: socketserver.ThreadingTCPServer | None = None

    def start(self) -> SyslogReceiver:
        receiver = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                while True:
                    length = b""
                    while (c := self.rfile.read(1)) not in (b" ", b""):
                        length += c
                    if not length:
                        return
                    receiver._take(self.rfile.read(int(length)))

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def _take(self, frame: bytes) -> None:
        found = _RFC5424.fullmatch(frame)
        assert found is not None, frame[:200]
        parsed = {k: v.decode() for k, v in found.groupdict().items()}
        parsed["event"] = json.loads(parsed.pop("msg"))
        with self._lock:
            self.messages.append(parsed)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def ids(self) -> Counter[str]:
        with self._lock:
            return Counter(m["event"]["id"] for m in self.messages)
