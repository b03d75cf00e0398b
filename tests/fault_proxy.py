"""A fault proxy: a real HTTP proxy between a provider client and the sandbox that answers
as the provider's docs allow a provider (or the balancer in front of it) to answer, not as
the sandbox would: a status before the request reaches the provider or after it acted, a
connection reset after the provider acted, an answer held past the client's read timeout,
the provider's answer rewritten (a list item dropped or repeated, metadata removed).

Rules match a request by method and path (a regular expression searched in the path with
its query), skip the first `skip` matches and take the next `times` (None: every one).
Every request is logged with what the proxy did, so a test counts what reached the
provider. No mock: the client speaks HTTP to this server, which speaks HTTP to the sandbox.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

from devtools.servers import free_port

# What a proxy does to a matched request:
BEFORE = "status_before"  # answers `status` without forwarding: the provider saw nothing
AFTER = "status_after"  # forwards (the provider acts), then answers `status` instead
RESET = "reset_after"  # forwards, then resets the connection: no answer at all
HOLD = "hold"  # forwards, then holds the answer `hold_s` (past the read timeout)
REWRITE = "rewrite"  # forwards, then answers the provider's body through `rewrite`

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}
HOP_BY_HOP |= {"content-encoding"}  # requests decoded the body already


@dataclass
class Rule:
    action: str
    path: str = ""  # a regular expression searched in the path and query
    method: str | None = None
    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    skip: int = 0  # matches let through first
    times: int | None = 1  # matches taken (None: all)
    hold_s: float = 5.0
    rewrite: Callable[[bytes], bytes] | None = None
    seen: int = 0
    taken: int = 0

    def takes(self, method: str, path: str) -> bool:
        if self.method is not None and self.method != method:
            return False
        if not re.search(self.path, path):
            return False
        self.seen += 1
        if self.seen <= self.skip or (self.times is not None and self.taken >= self.times):
            return False
        self.taken += 1
        return True


@dataclass(frozen=True)
class Logged:
    method: str
    path: str
    action: str  # "forwarded" or the rule's action
    status: int | None  # what the client got (None: no answer)


class FaultProxy:
    """The proxy's rules and log; `url` is the base URL a client is given instead of the
    sandbox's."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.rules: list[Rule] = []
        self.log: list[Logged] = []
        self._lock = threading.Lock()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def add(self, action: str, path: str = "", **options: object) -> Rule:
        rule = Rule(action, path, **options)  # type: ignore[arg-type]
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def count(self, method: str, path: str) -> int:
        """Requests that reached the provider (forwarded) whose path matches."""
        return sum(
            1
            for entry in self.log
            if entry.method == method and entry.action != BEFORE and re.search(path, entry.path)
        )

    def _rule_for(self, method: str, path: str) -> Rule | None:
        with self._lock:
            return next((r for r in self.rules if r.takes(method, path)), None)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet
            return

        def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
            # No Date or Server of the proxy's own: the provider's Date is its clock.
            self.send_response_only(status)
            for name, value in headers.items():
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _reset(self) -> None:
            # SO_LINGER 0: close sends a RST, as a cut connection does.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else b""
            method, path = self.command, self.path
            rule = proxy._rule_for(method, path)
            action = rule.action if rule else "forwarded"
            if rule is not None and rule.action == BEFORE:
                proxy.log.append(Logged(method, path, action, rule.status))
                self._answer(rule.status, rule.headers, rule.body)
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            upstream = requests.request(
                method, proxy.upstream + path, headers=headers, data=data, timeout=30
            )
            status, body = upstream.status_code, upstream.content
            answer_headers = dict(upstream.headers)
            if rule is not None and rule.action == RESET:
                proxy.log.append(Logged(method, path, action, None))
                self._reset()
                return
            if rule is not None and rule.action == AFTER:
                status, body, answer_headers = rule.status, rule.body, dict(rule.headers)
            elif rule is not None and rule.action == HOLD:
                time.sleep(rule.hold_s)
            elif rule is not None and rule.action == REWRITE and rule.rewrite is not None:
                body = rule.rewrite(body)
            proxy.log.append(Logged(method, path, action, status))
            try:
                self._answer(status, answer_headers, body)
            except OSError:  # the client gave up waiting (a held answer)
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_DELETE = _handle

    return Handler


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()
