"""The OpenAI Responses API (`POST /api/v1/responses` and its run routes): an edge that converts
the Responses wire format to a turn submitted through the product's run route, and the run's
outcome and events back (docs/protocols.md)."""

from ._api import ResponsesApi
from ._ids import RunRef, decode_response_id
from ._routes import RESPONSES_ROUTES

__all__ = ["RESPONSES_ROUTES", "ResponsesApi", "RunRef", "decode_response_id"]
