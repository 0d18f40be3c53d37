"""The OpenAI Responses API (`POST /api/v1/responses` and its run routes): an edge that converts
the Responses wire format to a turn submitted through the product's run route, and the run's
outcome and events back (docs/protocols.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._ids import RunRef, decode_response_id
from ._routes import RESPONSES_ROUTES

if TYPE_CHECKING:
    from ..http import Api
    from ._api import ResponsesApi


def responses_api(api: Api) -> ResponsesApi:
    """The edge over ``api``; importing it imports openai's Responses types, so build_app builds it on the
    edge's first request (hosting._lazy)."""
    from ._api import ResponsesApi

    return ResponsesApi(api)


__all__ = ["RESPONSES_ROUTES", "RunRef", "decode_response_id", "responses_api"]
