"""The sandbox's HTTP server: threaded, and able to stop listening for a while (refuse)."""

from __future__ import annotations

import logging
import threading
import time

from werkzeug.serving import BaseWSGIServer, make_server

from sandbox.app import create_app
from sandbox.braintree import gateway as braintree_gateway
from sandbox.context import SandboxConfig
from sandbox.events import Deliverer
from sandbox.stripe.balance import AutomaticPayouts
from sandbox.stripe.refunds import settle_due

log = logging.getLogger("sandbox")


class RefusingServer:
    """Serves until told to refuse; then closes the listening socket, waits, and listens again."""

    def __init__(self, host: str, port: int, config: SandboxConfig) -> None:
        self.host, self.port = host, port
        self._refuse_until = 0.0
        self._lock = threading.Lock()
        self._server: BaseWSGIServer | None = None
        self._stopped = threading.Event()
        config.refuse = self.refuse
        self.config = config
        self.app = create_app(config)
        self._payouts = AutomaticPayouts(config.payout_interval_s)

    def refuse(self, seconds: float) -> None:
        with self._lock:
            self._refuse_until = max(self._refuse_until, time.time() + seconds)
            server = self._server
        log.warning("refusing connections for %.1f s", seconds)
        if server is not None:
            # shutdown() waits for the serve loop: never call it from a request thread directly.
            threading.Thread(target=server.shutdown, daemon=True).start()

    def _tick(self) -> None:
        """What changes with time: refunds that settle later, automatic payouts, Braintree's
        settlements."""
        store = self.app.extensions["sandbox_store"]
        with self.app.app_context():
            settle_due(store)
            self._payouts(store)
            braintree_gateway.settle_due(store)

    def serve_forever(self) -> None:
        if self.config.webhook_url:
            Deliverer(
                self.app.extensions["sandbox_store"],
                self.config.webhook_url,
                {"stripe": self.config.stripe_webhook_secret},
                on_tick=self._tick,
                braintree_keys=(
                    self.config.braintree_public_key,
                    self.config.braintree_private_key,
                ),
            ).start()
        while not self._stopped.is_set():
            wait_s = self._refuse_until - time.time()
            if wait_s > 0:
                time.sleep(min(wait_s, 0.2))
                continue
            server = make_server(self.host, self.port, self.app, threaded=True)
            with self._lock:
                self._server = server
            log.info("sandbox listening on http://%s:%d", self.host, self.port)
            try:
                server.serve_forever(poll_interval=0.1)
            finally:
                server.server_close()
                with self._lock:
                    self._server = None

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            server = self._server
        if server is not None:
            server.shutdown()
