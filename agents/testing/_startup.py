"""A devhost startup hook: the offline model server when no model endpoint is configured.

``make run`` (and the tests that start ``python -m devhost``) name
``agents.testing:start_offline_model_if_unconfigured`` as the host's startup hook, so the app
answers with the offline model out of the box while devhost itself knows nothing of agents.
"""

from __future__ import annotations

import logging
import os

from .._settings import ENDPOINT_ENV, ModelEnv
from ._server import ModelServer

STREAM_DELAY_ENV = "AGENTS_OFFLINE_STREAM_DELAY"
"""Seconds between the offline model's streamed tokens (`make run` sets 0.05 so tokens are seen
arriving; unset: no delay, as the tests want)."""

_log = logging.getLogger("agents.testing")


def model_configured() -> bool:
    """Whether the environment names a model endpoint or key."""
    return any(os.environ.get(name) for name in ENDPOINT_ENV)


def start_offline_model_if_unconfigured() -> ModelServer | None:
    """Start an offline ``ModelServer`` and point the OPENAI_* settings at it, unless a model is
    configured. Returns the running server (the caller stops it), or None."""
    if model_configured():
        return None
    try:
        delay = max(0.0, float(os.environ.get(STREAM_DELAY_ENV) or 0))
    except ValueError:
        _log.warning("%s is not a number of seconds; streaming without delay", STREAM_DELAY_ENV)
        delay = 0.0
    server = ModelServer(mode="offline", port=0, stream_delay=delay)
    server.start()
    base_url = str(server.base_url)
    os.environ[ModelEnv.OPENAI_BASE_URL] = base_url
    os.environ[ModelEnv.OPENAI_API_KEY] = "offline"
    os.environ.setdefault(ModelEnv.OPENAI_CHAT_MODEL_ID, "offline")
    _log.info(
        "no model configured: using the offline model server at %s (set OPENAI_API_KEY/"
        "OPENAI_BASE_URL or AZURE_OPENAI_ENDPOINT for a real model)",
        base_url,
    )
    return server
