"""The Azure Functions entry point: the catalogue's agents hosted as durable entities.

`func start` (with Azurite) and `python -m devhost` both import `app` from here.
"""

from agents.catalog import AGENTS
from hosting import build_app

app = build_app(AGENTS)
