"""Starting a run's delivery, reading its outcome, and the durable functions declared on the app."""

from __future__ import annotations

import logging
from typing import Any

import azure.durable_functions as df

from .._settings import WebhookSettings, current
from ..client import BoundClient, durable_client_input
from ._deliver import deliver
from ._orchestration import DELIVER, WEBHOOK, delivery_spec, webhook_instance, webhook_orchestrator
from ._settings import pace_of
from ._spec import Webhook

log = logging.getLogger("hosting.webhooks")


async def start_delivery(
    client: Any,
    agent: str,
    session_id: str,
    correlation_id: str,
    user_id: str | None,
    webhook: Webhook,
    settings: WebhookSettings | None = None,
) -> None:
    """Start the run's delivery (before the turn is sent; `settings`: default the app's). A retried
    request finds it started: the backend refuses a second start of the instance, which is what
    it should do."""
    pace = pace_of(current().webhooks if settings is None else settings)
    instance, spec = delivery_spec(agent, session_id, correlation_id, user_id, webhook, pace)
    try:
        await client.start_new(WEBHOOK, instance, spec)
    except Exception:
        status = await client.get_status(instance)
        if getattr(status, "runtime_status", None) is None:
            raise
        log.info("webhook of run %s: started already (%s)", correlation_id, instance)


async def delivery_of(client: Any, agent: str, session_id: str, correlation_id: str) -> dict[str, Any] | None:
    """The run's delivery as the run resource shows it (`webhook`), None when it asked for none."""
    status = await client.get_status(webhook_instance(agent, session_id, correlation_id))
    if getattr(status, "runtime_status", None) is None:
        return None
    shown = getattr(status, "output", None) or getattr(status, "custom_status", None)
    if not isinstance(shown, dict):
        return None
    shown = dict(shown)
    runtime = getattr(status.runtime_status, "value", status.runtime_status)
    if runtime in ("Failed", "Terminated") and shown.get("status") in ("waiting", "delivering"):
        shown["status"] = "failed"
    return shown


async def cancel_delivery(client: Any, agent: str, session_id: str, correlation_id: str) -> bool:
    """Stop the run's delivery if it has not ended (its receiver no longer wants it); whether
    there was one to stop."""
    instance = webhook_instance(agent, session_id, correlation_id)
    status = await client.get_status(instance)
    runtime = getattr(getattr(status, "runtime_status", None), "value", None)
    if runtime is None:
        return False
    if runtime in ("Running", "Pending"):
        await client.terminate(instance, "the delivery was withdrawn")
    return True


def register_webhooks(app: df.DFApp, settings: WebhookSettings | None = None) -> None:
    """Declare the delivery orchestration and its activity on the app (`settings`: the allowlist
    and secret its attempts use, default the app's)."""
    webhook_orchestrator.__name__ = WEBHOOK
    decorated = app.orchestration_trigger(context_name="context", orchestration=WEBHOOK)(webhook_orchestrator)
    app.function_name(WEBHOOK)(decorated)

    # `spec: dict`: the worker refuses an activity trigger annotated with a generic alias.
    async def deliver_attempt(spec: dict, client: BoundClient) -> dict:
        return await deliver(spec, client, current().webhooks if settings is None else settings)

    deliver_attempt.__name__ = DELIVER
    bound = durable_client_input(app, deliver_attempt)
    app.function_name(DELIVER)(app.activity_trigger(input_name="spec", activity=DELIVER)(bound))
