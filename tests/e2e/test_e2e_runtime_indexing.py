"""The real Functions Python runtime (azure-functions-runtime, which Azure runs for 3.13 apps)
indexes every function of the project's function_app.py: one it refused would make the deployed
app serve nothing."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from e2e_support import REPO

from devhost import LocalHost


async def test_the_runtime_indexes_every_function_of_the_app(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    monkeypatch.setenv("OPENAI_CHAT_MODEL_ID", "unused")
    monkeypatch.setenv("DURABLE_AGENTS_HISTORY_DIR", str(tmp_path / "history"))
    # The MCP example agent is hosted when its server's setting is set: set, so its functions are
    # indexed too (no server needs to listen for that).
    monkeypatch.setenv("EXAMPLES_MCP_URL", "http://127.0.0.1:9/mcp")
    # What the app declares, read in a fresh interpreter with the environment the workers get (this
    # process may have imported the app earlier, under another environment).
    script = ("import json, function_app; from devhost import list_functions; "
              "print(json.dumps([f.get_function_name() for f in list_functions(function_app.app)]))")
    listed = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=dict(os.environ),
                            capture_output=True, text=True, timeout=120, check=True)
    declared = set(json.loads(listed.stdout.splitlines()[-1]))
    assert "dafx-timekeeper" in declared
    host = LocalHost("function_app", tmp_path / "data", project_dir=REPO, function_key="")
    await host.start()
    try:
        model = host.model
        assert model is not None
        indexed = (
            {f.name for f in model.http}
            | {f.function_name for f in (*model.entities.values(), *model.orchestrators.values(),
                                         *model.activities.values())}
            | {f.name for f in model.mcp_tools}
        )
        assert len(declared) >= 28
        assert indexed == declared
        assert not model.unsupported
        # The app serves HTTP streams, so the worker answered worker init with its HTTP server.
        assert host.workers is not None
        assert all(w.http_uri for g in host.workers.groups.values() for w in g.workers)
    finally:
        await host.stop()
