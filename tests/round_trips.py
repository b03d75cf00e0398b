"""A TCP proxy that counts round trips: put it between the app and a real server
(PostgreSQL, Redis) and read how many times a client spoke and waited for an answer.

A round trip is a burst of bytes from the client that follows the server's last answer
(or opens the connection): a pipeline is one, a statement with its own BEGIN is two.
Counted per connection and summed, whatever the driver does underneath.
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from flask.testing import FlaskClient

from devtools.servers import free_port
from tests.helpers import api_customer, seed_catalog


class RoundTripProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self.round_trips = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> int:
        """The round trips counted since the last reset."""
        with self._lock:
            counted, self.round_trips = self.round_trips, 0
        return counted

    def close(self) -> None:
        self._stopped.set()
        self._server.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        client_spoke_last = False
        try:
            while not self._stopped.is_set():
                ready, _, _ = select.select([client, upstream], [], [], 0.5)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        if not client_spoke_last:
                            with self._lock:
                                self.round_trips += 1
                        client_spoke_last = True
                        upstream.sendall(data)
                    else:
                        client_spoke_last = False
                        client.sendall(data)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()


@contextmanager
def counted(url: str) -> Iterator[tuple[str, RoundTripProxy]]:
    """(the same URL through a counting proxy, the proxy)."""
    parts = urlsplit(url)
    proxy = RoundTripProxy(parts.hostname or "127.0.0.1", parts.port or 0)
    auth, _, _ = parts.netloc.rpartition("@")
    netloc = f"{auth}@127.0.0.1:{proxy.port}" if auth else f"127.0.0.1:{proxy.port}"
    try:
        yield urlunsplit(parts._replace(netloc=netloc)), proxy
    finally:
        proxy.close()


@contextmanager
def counted_shop(
    make_app: Callable[..., Any], database_url: str
) -> Iterator[tuple[FlaskClient, dict[str, str], RoundTripProxy]]:
    """An app whose database is behind a counting proxy, with the catalog and one API
    customer: (its test client, the customer's headers, the proxy)."""
    with counted(database_url) as (db_url, database):
        app = make_app(SQLALCHEMY_DATABASE_URI=db_url)
        with app.app_context():
            seed_catalog()
        _, headers = api_customer(app)
        yield app.test_client(), headers, database
