"""Webhooks: a run that names `webhook: {"url": ...}` has its outcome POSTed there, signed, once
it ends (docs/protocols.md "Webhooks"). An edge asks for a delivery by putting a `Webhook` on
the run it sends (`RunCall.webhook`, the run body's `webhook` field) and may register its own
payload format (`register_format`)."""

from ._spec import RUN_FORMAT, EndedRun, Rendered, Renderer, Webhook, formats, register_format, renderer_of

__all__ = [
    "RUN_FORMAT",
    "EndedRun",
    "Rendered",
    "Renderer",
    "Webhook",
    "formats",
    "register_format",
    "renderer_of",
]
