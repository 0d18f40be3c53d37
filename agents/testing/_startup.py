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

_log = logging.getLogger("agents.testing")


def model_configured() -> bool:
    """Whether the environment names a model endpoint or key."""
    return any(os.environ.get(name) for name in ENDPOINT_ENV)


def start_offline_model_if_unconfigured() -> ModelServer | None:
    """Start an offline ``ModelServer`` and point the OPENAI_* settings at it, unless a model is
    configured. Returns the running server (the caller stops it), or None."""
    if model_configured():
        return None
    server = ModelServer(mode="offline", port=0)
    server.start()
    base_url = str(server.base_url)
    os.environ[ModelEnv.OPENAI_BASE_URL] = base_url
    os.environ[ModelEnv.OPENAI_API_KEY] = "offline"
    os.environ.setdefault(ModelEnv.OPENAI_CHAT_MODEL_ID, "offline")
    _log.info("no model configured: using the offline model server at %s (set OPENAI_API_KEY/"
              "OPENAI_BASE_URL or AZURE_OPENAI_ENDPOINT for a real model)", base_url)
    return server
