"""One delivery attempt (the `dafx_webhook_deliver` activity): render the ended run, sign it,
POST it to the checked address, and classify the answer.

* 2xx: delivered. 3xx (redirects are never followed), and 4xx other than 408 and 429: failed,
  final. 5xx, 408, 429, a timeout or a connection error: retried by the orchestration.
* The receiver's body is read up to `MAX_READ_BYTES` and dropped: a huge or endless answer
  neither holds the worker nor fills its memory; each attempt has `Pace.timeout` seconds in all.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from .._settings import WebhookSettings
from ._spec import EndedRun, Webhook, renderer_of
from ._urls import HOSTS_ENV, Target, WebhookRefused, allowed_hosts, check_url, resolve

log = logging.getLogger("hosting.webhooks")

ID_HEADER = "X-Webhook-Id"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"
SIGNATURE_HEADER = "X-Webhook-Signature"
MAX_READ_BYTES = 4096
_OWN = {ID_HEADER.lower(), TIMESTAMP_HEADER.lower(), SIGNATURE_HEADER.lower(), "content-type", "host"}


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """`v1=` and the hex HMAC-SHA256 of `{timestamp}.{body}` (docs/protocols.md "Webhooks")."""
    return "v1=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


class _Pinned(AbstractResolver):
    """Answers the addresses checked before the attempt: the connection cannot resolve again."""

    def __init__(self, hosts: list[ResolveResult]) -> None:
        self._hosts = hosts

    async def resolve(self, host: str, port: int = 0, family: Any = 0) -> list[ResolveResult]:
        return list(self._hosts)

    async def close(self) -> None:
        return None


def _result(outcome: str, status: int | None = None, error: str | None = None) -> dict[str, Any]:
    return {"outcome": outcome, "status": status, "error": error}


def classify(status: int) -> str:
    """An HTTP status as `delivered`, `retry` or `failed` (final)."""
    if 200 <= status < 300:
        return "delivered"
    if status in (408, 429) or status >= 500:
        return "retry"
    return "failed"


async def deliver(spec: dict[str, Any], client: Any, settings: WebhookSettings) -> dict[str, Any]:
    """One attempt with the app's webhook `settings`; never raises for the receiver's faults (the
    answer says what happened)."""
    webhook = Webhook.from_json(spec["webhook"])
    try:
        target = check_url(webhook.url, allowed_hosts({HOSTS_ENV: settings.hosts or ""}))
    except WebhookRefused as error:  # the settings changed since the run was requested (a restart)
        return _result("failed", error=str(error))
    secret = settings.secret_bytes
    if secret is None:
        return _result("failed", error="the app setting DURABLE_AGENTS_WEBHOOK_SECRET is unset")
    renderer = renderer_of(webhook.format)
    if renderer is None:
        return _result("failed", error=f"no payload format {webhook.format!r} in this app")
    run = EndedRun(spec["agent"], spec["session"], spec["correlation"], spec.get("user"), webhook.token)
    rendered = await renderer(client, run)
    timestamp = str(int(time.time()))
    headers = {k: v for k, v in rendered.headers.items() if k.lower() not in _OWN}
    headers.update({
        "Content-Type": "application/json",
        ID_HEADER: spec["deliveryId"],
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(secret, timestamp, rendered.body),
    })
    try:
        return await _post(target, rendered.body, headers, float(spec["timeout"]))
    except WebhookRefused as error:
        return _result("failed", error=str(error))


async def _post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> dict[str, Any]:
    try:
        hosts = await resolve(target)
        connector = aiohttp.TCPConnector(resolver=_Pinned(hosts), force_close=True, use_dns_cache=False)
        limit = aiohttp.ClientTimeout(total=timeout)
        async with (
            aiohttp.ClientSession(connector=connector, timeout=limit, trust_env=False) as session,
            session.post(target.url, data=body, headers=headers, allow_redirects=False) as answer,
        ):
            await answer.content.read(MAX_READ_BYTES)  # bounded; the rest is dropped with the connection
            status = answer.status
            answer.close()
    except WebhookRefused:
        raise
    except (TimeoutError, aiohttp.ClientError, ConnectionError, OSError) as error:
        log.info("webhook %s: attempt failed: %s", target.host, type(error).__name__)
        return _result("retry", error=f"{type(error).__name__}: {error}"[:300])
    outcome = classify(status)
    if 300 <= status < 400:
        return _result(outcome, status, "a redirect is not followed")
    return _result(outcome, status, None if outcome == "delivered" else f"the receiver answered {status}")
