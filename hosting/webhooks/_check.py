"""Whether the app may call a run's webhook: checked while the request is parsed, before anything is
stored or sent (the delivery itself starts in hosting.webhooks._register, just before the signal)."""

from __future__ import annotations

from .._settings import WebhookSettings, current
from ._settings import SECRET_ENV
from ._spec import Webhook, formats, renderer_of
from ._urls import HOSTS_ENV, WebhookRefused, allowed_hosts, check_url


def check_webhook(webhook: Webhook, settings: WebhookSettings | None = None) -> None:
    """`WebhookRefused` unless the app may call `webhook` (the settings, default the app's: the
    URL, the format)."""
    settings = current().webhooks if settings is None else settings
    check_url(webhook.url, allowed_hosts({HOSTS_ENV: settings.hosts or ""}))
    if settings.secret is None:
        raise WebhookRefused(f"webhooks are off: the app setting {SECRET_ENV} (the signing secret) is unset")
    if renderer_of(webhook.format) is None:
        raise WebhookRefused(f"the format must be one of {', '.join(repr(f) for f in formats())}")
