"""The web server's own answers, in the API's shape: gunicorn's gthread worker whose
refusals of a request it could not read (400 bad request line or header, 414, 431:
past its `--limit-request-*`, before any app code runs) are JSON `{"error": {"code",
"message"}}` instead of an HTML page, and which closes the connection after a 413
(the rest of the body is never read, so the connection cannot carry another request:
gunicorn drops the app's `Connection: close` as hop-by-hop and would say keep-alive).

Used by the web program: `gunicorn --worker-class edge.JSONErrorWorker` (supervisor/)."""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's util.write_error, answering JSON (ASCII: the message may quote bytes of
    the request) and closing the connection, as gunicorn's own does."""
    code = reason.lower().replace(" ", "_")
    body = json.dumps({"error": {"code": code, "message": mesg or reason}})
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, (head + body).encode("ascii"))


class JSONErrorWorker(ThreadWorker):
    """gthread, with JSON refusals and a closed connection after a 413."""

    def init_process(self) -> None:
        # This process's gunicorn answers its own errors in JSON (util is the module
        # gunicorn's base worker calls write_error on).
        util.write_error = write_json_error
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        loaded: Any = getattr(self, "wsgi")  # noqa: B009  (gunicorn sets it untyped)
        self.wsgi = _closing_after_413(loaded)


def _closing_after_413(app: Any) -> Any:
    def closing(environ: dict[str, Any], start_response: Any) -> Any:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if status.startswith("413"):
                # gunicorn's response object: the start_response it hands the app is
                # its bound method; force_close makes it say and do Connection: close.
                getattr(getattr(start_response, "__self__", None), "force_close", lambda: None)()
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return closing
