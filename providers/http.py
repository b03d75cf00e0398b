"""The one HTTP policy for provider calls: timeouts, a total budget, and safe retries only.

This is the only level where a request that was sent is repeated, and only when
repeating cannot charge twice: GET, or a POST carrying an Idempotency-Key.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
)
from urllib3.util.retry import Retry

from providers.outcomes import NotSent, Unknown

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class HttpPolicy:
    """Timeouts and retries of provider requests; the values and why each is what it
    is: config.py (PROVIDER_*)."""

    connect_timeout_s: float
    read_timeout_s: float
    call_budget_s: float  # one call including retries and backoff
    max_retries: int  # repeats of a safe request
    retry_after_cap_s: int  # the longest Retry-After a worker sleeps
    backoff_factor_s: float = 0.25  # 0.25 s, 0.5 s, 1 s ... between attempts
    backoff_jitter_s: float = 0.25  # spreads retries of many workers apart
    backoff_max_s: float = 2.0
    # A response header by which the provider says a repeat cannot help ("false"):
    # the provider's own retry hint (Stripe: Stripe-Should-Retry). None: none.
    stop_retry_header: str | None = None

    @property
    def timeout(self) -> tuple[float, float]:
        return (self.connect_timeout_s, self.read_timeout_s)


class BudgetRetry(Retry):
    """urllib3 Retry that also stops when another attempt would overrun the call budget,
    and when the provider's retry hint header says "false"."""

    def __init__(
        self,
        *args: Any,
        deadline: float | None = None,
        attempt_s: float = 0.0,
        stop_header: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline
        self.attempt_s = attempt_s
        self.stop_header = stop_header

    def new(self, **kw: Any) -> BudgetRetry:
        kw.setdefault("deadline", self.deadline)
        kw.setdefault("attempt_s", self.attempt_s)
        kw.setdefault("stop_header", self.stop_header)
        return super().new(**kw)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> BudgetRetry:
        if response is not None:
            _note_retried(method, url, response)
        if (
            self.stop_header
            and response is not None
            and response.headers.get(self.stop_header) == "false"
        ):
            raise MaxRetryError(_pool, url or "", ResponseError(f"{self.stop_header}: false"))
        new_retry = super().increment(method, url, response, error, _pool, _stacktrace)
        if self.deadline is not None:
            wait_s = new_retry.get_backoff_time()
            if response is not None and self.respect_retry_after_header:
                wait_s = max(wait_s, self.get_retry_after(response) or 0.0)
            if time.monotonic() + wait_s + self.attempt_s > self.deadline:
                reason = error or ResponseError("call budget exhausted")
                raise MaxRetryError(_pool, url or "", reason)
        return new_retry


# Kept-alive connections per provider host: one per call in flight, up to a threaded
# worker's slots (requests keeps 10; more calls at once would each open a new one).
CONNECTIONS_KEPT = 128


class PolicyAdapter(HTTPAdapter):
    """Chooses the retry policy per request: safe requests retry, an unkeyed POST never."""

    def __init__(self, policy: HttpPolicy, *, is_keyed_post_retryable: bool) -> None:
        self.policy = policy
        self.is_keyed_post_retryable = is_keyed_post_retryable
        self._local = threading.local()
        super().__init__(max_retries=self._no_retry(), pool_maxsize=CONNECTIONS_KEPT)

    # requests reads `self.max_retries` once per send: a thread-local value lets
    # each request carry its own Retry (with its own deadline) without races.
    @property
    def max_retries(self) -> Retry:
        return getattr(self._local, "retry", None) or self._default_retry

    @max_retries.setter
    def max_retries(self, value: Retry) -> None:
        self._default_retry = value

    @staticmethod
    def _no_retry() -> Retry:
        return Retry(total=0, read=False, redirect=0, raise_on_status=False)

    def is_safe_to_repeat(self, request: requests.PreparedRequest) -> bool:
        if request.method in ("GET", "HEAD"):
            return True
        return (
            request.method == "POST"
            and self.is_keyed_post_retryable
            and bool(request.headers.get("Idempotency-Key"))
        )

    def _retry_for(self, request: requests.PreparedRequest) -> Retry:
        if not self.is_safe_to_repeat(request):
            return self._no_retry()
        p = self.policy
        return BudgetRetry(
            total=p.max_retries,
            connect=p.max_retries,
            read=p.max_retries,
            status=p.max_retries,
            other=0,
            redirect=0,
            allowed_methods=frozenset({"GET", "HEAD", "POST"}),
            status_forcelist=RETRY_STATUSES,
            backoff_factor=p.backoff_factor_s,
            backoff_jitter=p.backoff_jitter_s,
            backoff_max=p.backoff_max_s,
            retry_after_max=p.retry_after_cap_s,
            respect_retry_after_header=True,
            raise_on_status=False,
            deadline=time.monotonic() + p.call_budget_s,
            attempt_s=p.connect_timeout_s + p.read_timeout_s,
            stop_header=p.stop_retry_header,
        )

    def send(
        self,
        request: requests.PreparedRequest,
        *args: Any,
        **kwargs: Any,
    ) -> requests.Response:
        self._local.retry = self._retry_for(request)
        try:
            return super().send(request, *args, **kwargs)
        finally:
            self._local.retry = None


# The header by which a provider says an answer came from its idempotency store, not
# from running the request again (Stripe: `Idempotent-Replayed: true`).
REPLAYED_HEADER = "Idempotent-Replayed"


@dataclass(frozen=True)
class HttpExchange:
    """One answered HTTP request, as the call log keeps it (never a body)."""

    method: str
    endpoint: str  # the path, without the query string
    status: int
    request_id: str | None  # the provider's own id of the request (Stripe: Request-Id)
    # The answer is the stored one of an earlier request with the same key: nothing ran.
    is_replayed: bool = False
    # The provider's clock less ours when the answer arrived, from its `Date` header
    # (whole seconds, so within about a second and the request's latency); None: no Date.
    clock_offset_s: float | None = None


_TRACE = threading.local()


def traced() -> list[HttpExchange]:
    """The exchanges of this thread since the last call (and forget them)."""
    exchanges: list[HttpExchange] = getattr(_TRACE, "exchanges", [])
    _TRACE.exchanges = []
    return exchanges


def clock_offset_s(response: requests.Response, received_at: float) -> float | None:
    """The provider's clock less ours (`received_at`, unix time), from the answer's `Date`
    header; None when it has none or one that does not parse."""
    raw = response.headers.get("Date")
    if not raw:
        return None
    try:
        theirs = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if theirs.tzinfo is None:
        return None
    # The header truncates to the second: its middle is the best guess of their time.
    return round(theirs.timestamp() + 0.5 - received_at, 3)


def _note_retried(method: str | None, url: str | None, response: Any) -> None:
    """An answer the retry policy repeats the request after (urllib3's, never seen by
    requests' hooks): traced too, so the gateway knows what each attempt answered."""
    headers = response.headers
    exchange = HttpExchange(
        str(method),
        urlsplit(url or "").path,
        int(response.status),
        headers.get("Request-Id") or headers.get("X-Request-Id"),
        str(headers.get(REPLAYED_HEADER, "")).lower() == "true",
    )
    if not hasattr(_TRACE, "exchanges"):
        _TRACE.exchanges = []
    _TRACE.exchanges.append(exchange)


def _trace(response: requests.Response, *args: object, **kwargs: object) -> None:
    received_at = time.time()
    request = response.request
    endpoint = urlsplit(request.url or "").path
    request_id = response.headers.get("Request-Id") or response.headers.get("X-Request-Id")
    exchange = HttpExchange(
        str(request.method),
        endpoint,
        response.status_code,
        request_id,
        response.headers.get(REPLAYED_HEADER, "").lower() == "true",
        clock_offset_s(response, received_at),
    )
    if not hasattr(_TRACE, "exchanges"):
        _TRACE.exchanges = []
    _TRACE.exchanges.append(exchange)


class _SettingsOnly(requests.auth.AuthBase):
    """A request's credentials are what its client sets (from our settings), never a
    ~/.netrc entry: without a session auth, requests looks for that file on every
    request that carries none of its own (ours carry a header)."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        return request


class _Session(requests.Session):
    """requests reads the proxy and CA-bundle environment variables (and walks NO_PROXY)
    on every request: a twentieth of a charge's CPU. A process's environment does not
    change, so here they are read once per scheme and host."""

    def __init__(self) -> None:
        super().__init__()
        self.auth = _SettingsOnly()
        self._environment: dict[tuple[str, str], Any] = {}

    def merge_environment_settings(
        self, url: str | bytes | None, proxies: Any, stream: Any, verify: Any, cert: Any
    ) -> Any:
        if proxies or stream is not None or verify is not None or cert is not None:
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        parts = urlsplit(url.decode() if isinstance(url, bytes) else url or "")
        key = (parts.scheme, parts.netloc)
        if key not in self._environment:
            self._environment[key] = super().merge_environment_settings(url, {}, None, None, None)
        kept = self._environment[key]
        return {**kept, "proxies": dict(kept["proxies"])}


def build_session(policy: HttpPolicy, *, is_keyed_post_retryable: bool) -> requests.Session:
    """A session whose every request follows `policy` (set the timeout per call: policy.timeout)
    and leaves a trace of each answer for the call log (`traced`)."""
    session = _Session()
    adapter = PolicyAdapter(policy, is_keyed_post_retryable=is_keyed_post_retryable)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.hooks["response"].append(_trace)
    return session


def _root_cause(exc: BaseException) -> BaseException:
    """The urllib3 error under requests' wrappers (MaxRetryError.reason included)."""
    seen = exc
    for _ in range(5):
        inner: BaseException | None = None
        if isinstance(seen, MaxRetryError) and seen.reason is not None:
            inner = seen.reason
        elif seen.args and isinstance(seen.args[0], BaseException):
            inner = seen.args[0]
        if inner is None:
            return seen
        seen = inner
    return seen


def classify_exception(exc: requests.RequestException) -> NotSent | Unknown:
    """Sort a transport error: NotSent if the request provably never left, else Unknown."""
    if isinstance(exc, requests.ConnectTimeout):
        return NotSent(f"connect timeout: {exc}")
    if isinstance(exc, requests.exceptions.SSLError):
        return NotSent(f"TLS handshake failed: {exc}")
    if isinstance(exc, requests.ReadTimeout):
        return Unknown(f"read timeout: {exc}")
    cause = _root_cause(exc)
    # NewConnectionError (refused, DNS) subclasses ConnectTimeoutError: both mean not sent.
    if isinstance(cause, NewConnectionError | ConnectTimeoutError):
        return NotSent(f"could not connect: {cause}")
    if isinstance(cause, ReadTimeoutError):
        return Unknown(f"read timeout: {cause}")
    if isinstance(cause, ProtocolError):
        return Unknown(f"connection broken after sending: {cause}")
    return Unknown(f"{type(exc).__name__}: {exc}")


def parse_retry_after(response: requests.Response) -> float | None:
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None


def json_object(response: requests.Response) -> dict[str, Any]:
    """The response body as a dict; {} for anything else (HTML error pages, garbage)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def fetch_object(
    session: requests.Session, url: str, params: dict[str, str], policy: HttpPolicy, what: str
) -> dict[str, Any] | None:
    """GET one object of the provider's ({} when the answer is not one); None when the
    provider cannot be asked now."""
    try:
        response = session.get(url, params=params, timeout=policy.timeout)
    except requests.RequestException as exc:
        log.warning("%s failed: %s", what, exc)
        return None
    if response.status_code != 200:
        log.warning("%s answered %s", what, response.status_code)
        return None
    return json_object(response)


def fetch_list(
    session: requests.Session, url: str, params: dict[str, str], policy: HttpPolicy, what: str
) -> dict[str, Any] | None:
    """GET one page of a provider list (`{"data": [...], "has_more": ...}`), its `data`
    reduced to objects; None when the provider cannot be asked now."""
    body = fetch_object(session, url, params, policy, what)
    if body is None:
        return None
    data = body.get("data")
    body["data"] = (
        [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []
    )
    return body
