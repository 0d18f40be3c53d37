"""AG-UI 1.0 (the front-end protocol of CopilotKit and others) at `POST /api/agents/{agent}/ag-ui`:
an edge that converts a `RunAgentInput` into a turn of the product's own run route and the run's
event stream into AG-UI events (docs/protocols.md "AG-UI")."""

from ._api import AgUiApi
from ._routes import AGUI_ROUTES

__all__ = ["AGUI_ROUTES", "AgUiApi"]
