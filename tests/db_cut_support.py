"""A TCP proxy in front of PostgreSQL that cuts one connection at a chosen statement, as a
failover or a network cut does: before the statement reached the server (it did not
commit), or after the server answered it (it committed, and the answer is lost). The
statement is found by a piece of its SQL text in the client's bytes (psycopg sends the
text with each execution while statements are not prepared: `prepare_threshold=None`)."""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit


@dataclass
class _Armed:
    marker: bytes
    committed: bool


@dataclass
class CuttingProxy:
    upstream: tuple[str, int]
    listener: socket.socket = field(init=False)
    armed: list[_Armed] = field(default_factory=list)  # the cuts to make, in order
    cuts: int = 0  # connections cut so far
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def url_for(self, database_url: str) -> str:
        """The database URL with this proxy in place of the server."""
        parts = urlsplit(database_url)
        user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def arm(self, marker: str, *, committed: bool) -> None:
        """Cut the next connection that sends a statement containing `marker` (after the
        cuts armed before this one)."""
        with self.lock:
            self.armed.append(_Armed(marker.encode(), committed))

    def close(self) -> None:
        self.listener.close()

    def _take(self, data: bytes) -> _Armed | None:
        with self.lock:
            if not self.armed or self.armed[0].marker not in data:
                return None
            self.cuts += 1
            return self.armed.pop(0)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            _Link(self, client, server).start()


@dataclass
class _Link:
    proxy: CuttingProxy
    client: socket.socket
    server: socket.socket
    drop_reply: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._upstream, daemon=True).start()
        threading.Thread(target=self._downstream, daemon=True).start()

    def _close(self) -> None:
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _upstream(self) -> None:
        while True:
            try:
                data = self.client.recv(65536)
            except OSError:
                return self._close()
            if not data:
                return self._close()
            armed = self.proxy._take(data)
            if armed is not None and not armed.committed:
                return self._close()  # never reached the server: not committed
            if armed is not None:
                self.drop_reply.set()  # the server runs it; its answer is lost
            try:
                self.server.sendall(data)
            except OSError:
                return self._close()

    def _downstream(self) -> None:
        while True:
            try:
                data = self.server.recv(65536)
            except OSError:
                return self._close()
            if not data:
                return self._close()
            if self.drop_reply.is_set() and b"Z\x00\x00\x00\x05" in data:
                return self._close()  # ReadyForQuery: it ran (and committed) at the server
            if self.drop_reply.is_set():
                continue  # the answer so far, withheld
            try:
                self.client.sendall(data)
            except OSError:
                return self._close()
