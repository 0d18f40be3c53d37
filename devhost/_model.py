"""Start the offline model server when no model endpoint is configured."""

from __future__ import annotations

import logging
import os
from typing import Any

MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT")


def model_configured() -> bool:
    """Whether the environment names a model endpoint or key."""
    return any(os.environ.get(name) for name in MODEL_ENV)


def start_offline_model(logger: logging.Logger) -> Any | None:
    """Start ``agents.testing.ModelServer`` offline and point the OPENAI_* settings at it.

    Returns the server (to stop later), or None when a model is configured or the server
    package is not importable (the host still starts; the app decides what to do).
    """
    if model_configured():
        return None
    try:
        from agents.testing import ModelServer
    except Exception as exc:  # the package may not exist yet or fail to import
        logger.warning("no model configured and the offline model server is unavailable (%s)", exc)
        return None
    server = ModelServer(mode="offline", port=0)
    started = server.start()
    server = started if started is not None and hasattr(started, "base_url") else server
    base_url = str(server.base_url)
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = "offline"
    os.environ.setdefault("OPENAI_CHAT_MODEL_ID", "offline")
    logger.info("no model configured: using the offline model server at %s (set OPENAI_API_KEY/"
                "OPENAI_BASE_URL or AZURE_OPENAI_ENDPOINT for a real model)", base_url)
    return server


def stop_model(server: Any | None) -> None:
    """Stop a server returned by ``start_offline_model``."""
    stop = getattr(server, "stop", None) if server is not None else None
    if callable(stop):
        stop()
