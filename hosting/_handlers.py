"""The shapes of the app's HTTP handlers, in one place for every module that takes or wraps them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import azure.functions as func
from starlette.responses import Response as StarletteResponse

Handler = Callable[[func.HttpRequest, Any], Awaitable[func.HttpResponse | StarletteResponse]]
"""An HTTP handler: the request and the durable client (None for routes without one). It may
answer a Starlette response (an event stream, or the 204 that ends one), passed through as it is."""

ContextHandler = Callable[[func.HttpRequest, Any, Any], Awaitable[func.HttpResponse | StarletteResponse]]
"""A handler that also takes the invocation context (the worker's, with its W3C trace context)."""
