"""AG-UI 1.0 (the front-end protocol of CopilotKit and others) at `POST /api/agents/{agent}/ag-ui`:
an edge that converts a `RunAgentInput` into a turn of the product's own run route and the run's
event stream into AG-UI events (docs/protocols.md "AG-UI")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._routes import AGUI_ROUTES

if TYPE_CHECKING:
    from ..http import Api
    from ._api import AgUiApi


def agui_api(api: Api) -> AgUiApi:
    """The edge over ``api``; importing it imports ag-ui-protocol, so build_app builds it on the
    edge's first request (hosting._lazy)."""
    from ._api import AgUiApi

    return AgUiApi(api)


__all__ = ["AGUI_ROUTES", "agui_api"]
