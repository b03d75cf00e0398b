"""python -m sandbox [--port N ...]  |  python -m sandbox faults {list,add,clear} ..."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from decimal import Decimal, InvalidOperation
from typing import Any

import requests

from sandbox.context import (
    DEFAULT_AVAILABLE_AFTER_S,
    DEFAULT_KEY_LIFETIME_S,
    DEFAULT_REFUND_SETTLE_S,
    DEFAULT_SEARCH_LAG_S,
    SandboxConfig,
)
from sandbox.faults import FAULT_KINDS

FAULTS_HELP = "\n".join(
    f"  {kind:18} {text} (params: {', '.join(f'{k}={v}' for k, v in params.items()) or '-'})"
    for kind, (params, text) in FAULT_KINDS.items()
)


def _percent(raw: str) -> str:
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not a percentage: {raw!r}") from None
    if not value.is_finite() or not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"not a percentage: {raw!r}")
    return str(value)


def serve(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox",
        description="A stateful, fault-injecting payment provider simulator (Stripe "
        "PaymentIntents dialect at /v1, Braintree's gateway at /merchants/<id>, "
        "control API at /_sandbox). Dev and test only.",
        epilog="Fault kinds (python -m sandbox faults add KIND [key=value ...]):\n" + FAULTS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--db", default=None, help="SQLite state file (default: a temp file)")
    parser.add_argument(
        "--webhook-url",
        default=os.environ.get("SANDBOX_WEBHOOK_URL"),
        help="events are POSTed to <url>/stripe and <url>/braintree",
    )
    parser.add_argument("--secret-key", default="sk_test_sandbox", help="Stripe API key")
    parser.add_argument("--webhook-secret", default="whsec_sandbox", help="Stripe signing secret")
    parser.add_argument(
        "--key-lifetime-s",
        type=float,
        default=DEFAULT_KEY_LIFETIME_S,
        help="how long idempotency keys are kept (default 24 h)",
    )
    parser.add_argument(
        "--search-lag-s",
        type=float,
        default=DEFAULT_SEARCH_LAG_S,
        help="how long a new PaymentIntent stays invisible to search (default %(default)s s; "
        "the search_lag fault makes it an outage's hour)",
    )
    parser.add_argument(
        "--refund-settle-s",
        type=float,
        default=DEFAULT_REFUND_SETTLE_S,
        help="when a refund of pm_card_pendingRefund succeeds, or of pm_card_refundFail "
        "fails (default %(default)s s; POST /_sandbox/refunds/settle: now)",
    )
    parser.add_argument(
        "--available-after-s",
        type=float,
        default=DEFAULT_AVAILABLE_AFTER_S,
        help="when a balance transaction's money becomes available for a payout "
        "(default two days, Stripe's standard schedule)",
    )
    parser.add_argument(
        "--payout-interval-s",
        type=float,
        default=0.0,
        help="automatic payouts of the available balance every N s (default 0: only "
        "POST /_sandbox/stripe/payouts; needs --webhook-url, whose loop runs them)",
    )
    parser.add_argument(
        "--fee-percent", type=_percent, default="1.5", help="card fee: percent of the amount"
    )
    parser.add_argument("--fee-fixed", type=int, default=25, help="card fee: fixed, minor units")
    parser.add_argument("--dispute-fee", type=int, default=2000, help="minor units")
    parser.add_argument(
        "--braintree-settle-s",
        type=float,
        default=10.0,
        help="Braintree: seconds from a sale's submission to its settlement",
    )
    parser.add_argument(
        "--braintree-duplicate-window-s",
        type=float,
        default=30.0,
        help="Braintree's duplicate checking: the same card and amount within it (0: off)",
    )
    args = parser.parse_args(argv)
    from sandbox.server import RefusingServer

    logging.basicConfig(level=logging.INFO, format="%(asctime)s sandbox %(message)s")
    db_path = args.db or os.path.join(tempfile.mkdtemp(prefix="sandbox-"), "sandbox.db")
    config = SandboxConfig(
        db_path=db_path,
        stripe_secret_key=args.secret_key,
        stripe_webhook_secret=args.webhook_secret,
        webhook_url=args.webhook_url,
        key_lifetime_s=args.key_lifetime_s,
        search_lag_s=args.search_lag_s,
        refund_settle_s=args.refund_settle_s,
        available_after_s=args.available_after_s,
        payout_interval_s=args.payout_interval_s,
        fee_percent=args.fee_percent,
        fee_fixed=args.fee_fixed,
        dispute_fee=args.dispute_fee,
        braintree_settle_s=args.braintree_settle_s,
        braintree_duplicate_window_s=args.braintree_duplicate_window_s,
    )
    RefusingServer(args.host, args.port, config).serve_forever()


def faults(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox faults",
        epilog="Fault kinds:\n" + FAULTS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Inspect and change the faults of a running sandbox.",
    )
    parser.add_argument("--url", default=os.environ.get("SANDBOX_URL", "http://127.0.0.1:8099"))
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list")
    add = sub.add_parser(
        "add",
        help="add a fault: KIND [dialect=stripe] [endpoint=create] "
        "[rate=0.5] [count=3] [param=value ...]",
    )
    add.add_argument("kind", choices=sorted(FAULT_KINDS))
    add.add_argument("options", nargs="*", metavar="key=value")
    clear = sub.add_parser("clear", help="remove one fault by id, or all")
    clear.add_argument("id", nargs="?", type=int)
    args = parser.parse_args(argv)
    base = f"{args.url.rstrip('/')}/_sandbox/faults"
    if args.action == "list":
        response = requests.get(base, timeout=5)
    elif args.action == "add":
        spec: dict[str, Any] = {"kind": args.kind}
        for option in args.options:
            key, _, raw = option.partition("=")
            try:
                spec[key] = json.loads(raw)
            except json.JSONDecodeError:
                spec[key] = raw
        response = requests.post(base, json=spec, timeout=5)
    else:
        response = requests.delete(f"{base}/{args.id}" if args.id else base, timeout=5)
    print(json.dumps(response.json(), indent=2))
    if response.status_code >= 400:
        sys.exit(1)


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] == "faults":
        faults(argv[1:])
    else:
        serve(argv)


if __name__ == "__main__":
    main()
