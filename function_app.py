"""The Azure Functions entry point: the catalogue's agents hosted as durable entities, and the
review workflow (an example, wired in here by name: `build_app` registers nothing by itself).

`func start` (with Azurite) and `python -m devhost` both import `app` from here.
"""

import gc

from examples.catalog import AGENTS
from examples.review import review_workflow
from hosting import build_app

# Every agent is also an MCP tool (docs/mcp.md).
app = build_app(AGENTS, extensions=[review_workflow()], mcp_tools=True)

# The Functions Python worker imports this module once per worker process and keeps all of it
# (the app, the pydantic/SDK types) for the process's life. Frozen, those objects are left out of
# later cyclic collections, which would otherwise walk them on every full (gen-2) collection:
# 50-70 ms pauses every few turns on long sessions (see docs/bench.md). No collection first: it
# found a few hundred unreachable objects among some 180,000 and cost every cold start ~0.1 s.
gc.freeze()
