"""A worker's start imports no protocol SDK: the Responses, A2A and AG-UI edges load theirs on
their first request (hosting._lazy), and the model SDK loads on a thread after indexing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hosting_support import ROOT

PROBE = """
import json, sys
import hosting._app
hosting._app.preload_model_sdk = lambda: None  # the thread that imports openai after indexing
import function_app
from hosting.webhooks import formats
print(json.dumps({
    "formats": formats(),
    "functions": sorted(f.get_function_name() for f in function_app.app.get_functions()),
    "loaded": sorted(m for m in ("a2a", "ag_ui", "openai", "google.protobuf") if m in sys.modules),
}))
"""


def test_starting_the_app_imports_no_protocol_sdk() -> None:
    model = {"OPENAI_CHAT_MODEL_ID": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **model},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # the edges' functions are declared all the same
    assert {"a2a_rpc", "a2a_card", "agent_ag_ui", "responses_create"} <= set(found["functions"])
    assert found["loaded"] == []
    # a push may be delivered by a worker that never served an A2A request (in Azure, by the
    # Durable instance): its format is registered all the same
    assert found["formats"] == ["a2a", "run"]
