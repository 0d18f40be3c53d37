"""The A2A protocol (1.0, and 0.3 for clients that ask for it): an agent card and a JSON-RPC
endpoint per agent, an edge that converts A2A messages to turns submitted through the product's
run route, and the run's outcome and events back as A2A tasks (docs/protocols.md)."""

from ._api import A2aApi
from ._routes import A2A_ROUTES

__all__ = ["A2A_ROUTES", "A2aApi"]
