"""The development mail sink: an SMTP server (aiosmtpd) that keeps every message as an
`.eml` file, for `make run` (instance/mail/) and the tests (a free port). Never for
production: it accepts anything from anyone.

    python -m devtools.mail_sink --port 8025 --dir instance/mail
"""

from __future__ import annotations

import argparse
import re
import threading
import time
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class EmlHandler:
    """Writes each message it accepts to `<dir>/<time>-<message id>.eml`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        content: bytes = envelope.original_content or envelope.content
        match = re.search(rb"^Message-ID:\s*<([^>]*)>", content, re.IGNORECASE | re.MULTILINE)
        name = SAFE.sub("_", match.group(1).decode(errors="replace")) if match else "no-id"
        with self.lock:
            path = self.directory / f"{time.time_ns()}-{name[:100]}.eml"
            path.write_bytes(content)
        return "250 Message accepted for delivery"


def start(port: int, directory: Path, host: str = "127.0.0.1") -> Controller:
    """The sink, listening in a thread of this process; stop() it when done."""
    controller = Controller(EmlHandler(directory), hostname=host, port=port)
    controller.start()
    return controller


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8025)
    parser.add_argument("--dir", type=Path, default=Path("instance/mail"))
    args = parser.parse_args()
    controller = start(args.port, args.dir, args.host)
    print(f"mail sink on {args.host}:{args.port}, messages in {args.dir}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
