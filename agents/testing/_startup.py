"""A devhost startup hook: the offline model server when no model endpoint is configured.

``make run`` (and the tests that start ``python -m devhost``) name
``agents.testing:start_offline_model_if_unconfigured`` as the host's startup hook, so the app
answers with the offline model out of the box while devhost itself knows nothing of agents.

The host starts its worker processes only once the hook has returned (they import the app, which
reads the settings the hook sets). The hook binds the server's socket, imports the server (aiohttp,
jsonschema, pydantic: about a third of a second, most of which the host would spend importing
aiohttp itself a moment later) and starts it on a thread. The import is not left to that thread:
the host imports its own parts on a thread while its workers start, and two threads importing
the same packages at once can see a module of an import cycle half initialised, or lose it from
`sys.modules`, and fail ("cannot import name ... from partially initialized module", `KeyError`).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

from .._env import ENDPOINT_ENV, ModelEnv
from ._socket import listening_socket

if TYPE_CHECKING:
    from ._server import ModelServer

STREAM_DELAY_ENV = "AGENTS_OFFLINE_STREAM_DELAY"
"""Seconds between the offline model's streamed tokens (`make run` sets 0.05 so tokens are seen
arriving; unset: no delay, as the tests want)."""

_log = logging.getLogger("agents.testing")


def model_configured() -> bool:
    """Whether the environment names a model endpoint or key."""
    return any(os.environ.get(name) for name in ENDPOINT_ENV)


class OfflineModel:
    """The offline `ModelServer` the hook started: listening from the start, serving once a
    thread has started it. `stop()` (the host calls it when it stops) ends it."""

    def __init__(self, stream_delay: float) -> None:
        self.listening = listening_socket("127.0.0.1", 0)
        self.base_url = f"http://127.0.0.1:{self.listening.getsockname()[1]}/v1"
        self.server: ModelServer | None = None
        from ._server import ModelServer  # here, not on the thread: see the module

        self._server_class = ModelServer
        self._thread = threading.Thread(
            target=self._start, args=(stream_delay,), name="offline-model", daemon=True
        )
        self._thread.start()

    def _start(self, stream_delay: float) -> None:
        try:
            server = self._server_class(mode="offline", stream_delay=stream_delay)
            self.server = server.start(listening=self.listening)
        except Exception:
            # Nothing will accept: close the socket, so model calls fail at once (connection
            # refused, the turn's connection_error) instead of waiting in its backlog.
            _log.exception("the offline model server failed to start")
            self.listening.close()

    def stop(self) -> None:
        """Stop serving (waits for a start still in progress first, at most 30 s)."""
        self._thread.join(timeout=30)
        if self.server is not None:
            self.server.stop()
        self.listening.close()


def start_offline_model_if_unconfigured() -> OfflineModel | None:
    """Start an offline ``ModelServer`` and point the OPENAI_* settings at it, unless a model is
    configured. Returns the server's handle (the caller stops it), or None."""
    if model_configured():
        return None
    try:
        delay = max(0.0, float(os.environ.get(STREAM_DELAY_ENV) or 0))
    except ValueError:
        _log.warning("%s is not a number of seconds; streaming without delay", STREAM_DELAY_ENV)
        delay = 0.0
    model = OfflineModel(delay)
    os.environ[ModelEnv.OPENAI_BASE_URL] = model.base_url
    os.environ[ModelEnv.OPENAI_API_KEY] = "offline"
    os.environ.setdefault(ModelEnv.OPENAI_CHAT_MODEL_ID, "offline")
    _log.info(
        "no model configured: using the offline model server at %s (set OPENAI_API_KEY/"
        "OPENAI_BASE_URL or AZURE_OPENAI_ENDPOINT for a real model)",
        model.base_url,
    )
    return model
