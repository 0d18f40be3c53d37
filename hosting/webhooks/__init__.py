"""Webhooks: a run that names `webhook: {"url": ...}` has its outcome POSTed there, signed, once
it ends (docs/protocols.md "Webhooks"). An edge asks for a delivery by putting a `Webhook` on
the run it sends (`RunCall.webhook`, the run body's `webhook` field) and may register its own
payload format (`register_format`)."""

from ._check import check_webhook
from ._deliver import ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, signature
from ._register import cancel_delivery, delivery_of, register_webhooks, start_delivery
from ._settings import SECRET_ENV, pace_from_env
from ._spec import RUN_FORMAT, EndedRun, Rendered, Renderer, Webhook, formats, register_format, renderer_of
from ._urls import HOSTS_ENV, WebhookRefused

__all__ = [
    "HOSTS_ENV",
    "ID_HEADER",
    "RUN_FORMAT",
    "SECRET_ENV",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "EndedRun",
    "Rendered",
    "Renderer",
    "Webhook",
    "WebhookRefused",
    "cancel_delivery",
    "check_webhook",
    "delivery_of",
    "formats",
    "pace_from_env",
    "register_format",
    "register_webhooks",
    "renderer_of",
    "signature",
    "start_delivery",
]
