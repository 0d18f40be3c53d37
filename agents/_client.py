"""The openai SDK client per (endpoint, event loop), and our retry loop around model calls."""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import gc
import random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import aiohttp

from ._errors import FailureCode, ModelCallError, streamed_failure
from ._per_loop import PerLoop
from ._settings import Endpoint, RetryPolicy, check_requests_allowed

if TYPE_CHECKING:
    import openai

# The openai SDK (0.4 s of imports, most of it its types) is imported on first use, not with this
# module: a worker process that imports the app answers the host's indexing that much sooner, at
# every cold start. `preload_model_sdk` imports it on a thread once the app is declared, so the
# first turn seldom waits for it.

T = TypeVar("T")

_AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
# An OpenAI-compatible server without auth (Ollama, vLLM, the local test server) still needs *a* key
# for the SDK to build a request.
_PLACEHOLDER_KEY = "no-key-needed"

# httpx connection pools belong to the loop that opened them, so clients are never shared across
# loops (hosting runs one loop per worker thread); a loop's clients go away with the loop.
_clients: PerLoop[dict[Endpoint, openai.AsyncOpenAI]] = PerLoop()
_credential_lock = threading.Lock()
_token_provider: Callable[[], str] | None = None


def _azure_token_provider() -> Callable[[], Awaitable[str]]:
    """An async Entra ID token provider over one process-wide DefaultAzureCredential."""
    global _token_provider
    with _credential_lock:
        if _token_provider is None:
            from azure.identity import DefaultAzureCredential, get_bearer_token_provider

            _token_provider = get_bearer_token_provider(DefaultAzureCredential(), _AZURE_SCOPE)
        sync_provider = _token_provider

    async def provide() -> str:
        # The sync credential caches tokens; a refresh does blocking I/O, so keep it off the loop.
        return await asyncio.to_thread(sync_provider)

    return provide


def preload_model_sdk() -> threading.Thread:
    """Import the openai SDK on a daemon thread (started here, returned), ahead of the first
    model call, which would otherwise import it. If the process has frozen its heap by then
    (`gc.freeze()`, as function_app.py does once the app is declared), the SDK's objects, which
    live as long as the process too, are frozen with it: left out of later cyclic collections."""

    def load() -> None:
        import openai  # noqa: F401

        if gc.get_freeze_count():
            gc.freeze()

    thread = threading.Thread(target=load, name="preload-openai", daemon=True)
    thread.start()
    return thread


def _transport() -> openai.DefaultAioHttpClient:
    import openai

    # The SDK's default httpx pool checks every pooled connection each time it hands one out or
    # takes one back, so a burst of N concurrent calls costs O(N^2) CPU on the loop: with 200
    # turns waiting on a model that was over a fifth of the host's CPU (docs/hosting.md "Figures").
    # aiohttp's pool does not; the SDK's own aiohttp client keeps the SDK's limits and timeouts.
    return openai.DefaultAioHttpClient()


def _create_client(endpoint: Endpoint) -> openai.AsyncOpenAI:
    import openai

    if endpoint.provider == "azure":
        assert endpoint.base_url is not None
        if endpoint.api_key:
            return openai.AsyncAzureOpenAI(
                azure_endpoint=endpoint.base_url,
                api_version=endpoint.api_version,
                api_key=endpoint.api_key,
                max_retries=0,
                http_client=_transport(),
            )
        return openai.AsyncAzureOpenAI(
            azure_endpoint=endpoint.base_url,
            api_version=endpoint.api_version,
            azure_ad_token_provider=_azure_token_provider(),
            max_retries=0,
            http_client=_transport(),
        )
    return openai.AsyncOpenAI(
        api_key=endpoint.api_key or _PLACEHOLDER_KEY,
        base_url=endpoint.url,
        max_retries=0,
        http_client=_transport(),
    )


def get_client(endpoint: Endpoint) -> openai.AsyncOpenAI:
    """The client for ``endpoint`` on the running event loop (created on first use).

    Raises ModelCallError("model_requests_disabled") for a non-loopback endpoint while
    DURABLE_AGENTS_ALLOW_MODEL_REQUESTS=0.
    """
    check_requests_allowed(endpoint)
    # The model is named in each request, never in the client: the chat and the embedding models
    # of one endpoint share one client (one connection pool, one credential). The loop's own map:
    # only that loop's thread reads or writes it.
    key = dataclasses.replace(endpoint, model="")
    per_loop = _clients.get_or_make(dict)
    client = per_loop.get(key)
    if client is None:
        client = per_loop[key] = _create_client(key)
    return client


async def close_model_clients() -> None:
    """Close the model clients of the running event loop (call before closing a long-lived loop)."""
    for client in (_clients.pop() or {}).values():
        await client.close()


# --- errors and retries ---------------------------------------------------------------------

_STATUS_CODES = {
    400: FailureCode.BAD_REQUEST,
    401: FailureCode.AUTHENTICATION_FAILED,
    403: FailureCode.PERMISSION_DENIED,
    404: FailureCode.MODEL_NOT_FOUND,
    408: FailureCode.TIMEOUT,
    409: FailureCode.CONFLICT,
    413: FailureCode.REQUEST_TOO_LARGE,
    422: FailureCode.UNPROCESSABLE_REQUEST,
    429: FailureCode.RATE_LIMITED,
}
# A 429 that says the account is out of quota will not get better by waiting.
_NON_RETRYABLE_429_CODES = {"insufficient_quota", "billing_hard_limit_reached"}


def _body_message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return exc.message


def _refused(exc: BaseException) -> bool:
    """Whether a reported timeout was really a connection that failed at once.

    The aiohttp transport maps every ``aiohttp.ClientConnectionError``, a refused connection
    included, to ``ConnectTimeout``; the aiohttp error it raised from tells them apart.
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, aiohttp.ClientConnectionError):
            return not isinstance(cause, aiohttp.ServerTimeoutError)
        cause = cause.__cause__ or cause.__context__
    return False


def classify_error(exc: BaseException) -> ModelCallError:
    """Map an SDK/transport exception to a ModelCallError with code, status and retryability."""
    if isinstance(exc, ModelCallError):
        return exc
    import openai

    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code = (
            exc.code
            or _STATUS_CODES.get(status)
            or (FailureCode.MODEL_SERVER_ERROR if status >= 500 else FailureCode.MODEL_ERROR)
        )
        retryable = status in (408, 409, 429) or status >= 500
        if status == 429 and exc.code in _NON_RETRYABLE_429_CODES:
            retryable = False
        # OpenAI's own hint, which its SDK follows too.
        hint = exc.response.headers.get("x-should-retry", "").lower()
        if hint in ("true", "false"):
            retryable = hint == "true"
        return ModelCallError(code, _body_message(exc), retryable=retryable, status=status)
    if isinstance(exc, (openai.APITimeoutError, TimeoutError)) and not _refused(exc):
        return ModelCallError(FailureCode.TIMEOUT, "the model did not answer in time", retryable=True)
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError too, when _refused
        cause = exc.__cause__ or exc.__context__
        detail = f": {cause}" if cause else ""
        message = f"cannot reach the model service{detail}"
        return ModelCallError(FailureCode.CONNECTION_ERROR, message, retryable=True)
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelCallError(
            FailureCode.INVALID_MODEL_RESPONSE, exc.message, retryable=True, status=exc.status_code
        )
    if isinstance(exc, openai.APIError):  # reported inside a streamed answer (its 200 was sent)
        return streamed_failure(exc.code, exc.type, exc.message)
    if isinstance(exc, openai.OpenAIError):
        return ModelCallError(FailureCode.MODEL_CLIENT_ERROR, str(exc), retryable=False)
    raise TypeError(f"not a model call error: {exc!r}")


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a 429/503 asked for (``retry-after-ms`` or ``Retry-After`` seconds / HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, policy: RetryPolicy, retry_after: float | None, rng: random.Random) -> float:
    """Wait before retry number ``attempt`` (1-based): exponential with jitter, at least Retry-After."""
    ceiling = min(policy.max_delay, policy.base_delay * (2 ** (attempt - 1)))
    delay = ceiling / 2 + rng.uniform(0, ceiling / 2)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


_rng = random.Random()


async def call_with_retries(
    call: Callable[[float], Awaitable[T]],
    policy: RetryPolicy,
    timeout: float,
    *,
    on_retry: Callable[[int, ModelCallError, float], None] | None = None,
) -> T:
    """Run ``call(attempt_timeout)`` until it succeeds, fails for good, or the deadline passes.

    Retryable failures (429, 5xx, timeouts, connection errors) are retried with backoff; the
    final failure is raised as ModelCallError.
    """
    import openai

    loop = asyncio.get_running_loop()
    started = loop.time()
    attempt = 0
    while True:
        attempt += 1
        remaining = policy.deadline - (loop.time() - started)
        attempt_timeout = max(0.001, min(timeout, remaining))
        try:
            # The SDK timeout bounds each HTTP phase; this one bounds the whole attempt.
            async with asyncio.timeout(attempt_timeout + 0.05):
                return await call(attempt_timeout)
        except (openai.OpenAIError, TimeoutError, ModelCallError) as exc:
            error = classify_error(exc)
            if not error.retryable or attempt >= policy.max_attempts:
                raise _final(error, attempt) from exc
            delay = backoff_delay(attempt, policy, retry_after_seconds(exc), _rng)
            if loop.time() - started + delay >= policy.deadline:
                raise _final(error, attempt, deadline=True) from exc
            if on_retry is not None:
                on_retry(attempt, error, delay)
            await asyncio.sleep(delay)


def _final(error: ModelCallError, attempts: int, *, deadline: bool = False) -> ModelCallError:
    if attempts == 1 and not deadline:
        return error
    why = "retry deadline reached" if deadline else "giving up"
    return ModelCallError(
        error.code,
        f"{error.message} ({why} after {attempts} attempt{'s' if attempts > 1 else ''})",
        retryable=error.retryable,
        status=error.status,
    )
