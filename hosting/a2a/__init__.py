"""The A2A protocol (1.0, and 0.3 for clients that ask for it): an agent card and a JSON-RPC
endpoint per agent, an edge that converts A2A messages to turns submitted through the product's
run route, and the run's outcome and events back as A2A tasks (docs/protocols.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._routes import A2A_FORMAT, A2A_ROUTES

if TYPE_CHECKING:
    from ..http import Api
    from ._api import A2aApi


def a2a_api(api: Api) -> A2aApi:
    """The edge over ``api``; importing it imports a2a-sdk, so build_app builds it on the
    edge's first request (hosting._lazy)."""
    from ._api import A2aApi

    return A2aApi(api)


__all__ = ["A2A_FORMAT", "A2A_ROUTES", "a2a_api"]
