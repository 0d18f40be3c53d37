"""The README's "Add your own agent", followed as written: its `my_agent.py`, its change to
`function_app.py`, then its two requests against `python -m devhost` with the offline model."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Iterator

import httpx
import pytest
from e2e_support import FUNCTION_KEY, REPO, HostProcess

SECTION = re.compile(r"^## Add your own agent\n(.*?)^## ", re.S | re.M)
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _section() -> list[tuple[str, str]]:
    found = SECTION.search((REPO / "README.md").read_text())
    assert found, "the README has no 'Add your own agent' section"
    return BLOCK.findall(found.group(1))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    blocks = _section()
    [agent_module] = [code for lang, code in blocks if lang == "python" and "Agent(" in code]
    [app_lines] = [code for lang, code in blocks if lang == "python" and "build_app(" in code]
    root = tmp_path_factory.mktemp("first-agent")
    (root / "my_agent.py").write_text(agent_module)
    original = (REPO / "function_app.py").read_text()
    # The README's lines replace the catalogue import and the app line of the real file.
    kept = [
        line for line in original.splitlines() if not line.startswith(("from examples.catalog", "app = "))
    ]
    (root / "function_app.py").write_text("\n".join(kept) + "\n" + app_lines)
    shutil.copy(REPO / "host.json", root / "host.json")
    host = HostProcess(root / "data", None, root / "host.log", cwd=root).start()
    try:
        yield host
    finally:
        host.stop()


def _requests() -> list[tuple[str, dict[str, object], str]]:
    """Each `curl` of the section's shell block: its path, JSON body and the comment after it."""
    [shell] = [code for lang, code in _section() if lang == "sh"]
    out = []
    for command in shell.replace("\\\n", " ").splitlines():
        code, _, comment = command.partition("#")
        words = shlex.split(code)
        url = next(w for w in words if w.startswith("localhost:"))
        body = json.loads(words[words.index("-d") + 1])
        out.append((url.removeprefix("localhost:7071"), body, comment.strip()))
    return out


async def test_the_readme_first_agent_answers_as_it_says(project: HostProcess) -> None:
    requests = _requests()
    assert len(requests) == 2
    async with httpx.AsyncClient(
        base_url=project.url, headers={"x-functions-key": FUNCTION_KEY}, timeout=60
    ) as web:
        agents = (await web.get("/api/agents")).json()
        assert {"calculator", "auditor"} <= {a["name"] for a in agents["agents"]}, agents
        (path, body, said), (path2, body2, said2) = requests
        plain = await web.post(path, json=body)
        assert plain.status_code == 200, plain.text
        assert plain.json()["response"]["text"] == 'tool results: add: {"sum": 5}', (said, plain.json())
        shaped = await web.post(path2, json=body2)
        assert shaped.status_code == 200, shaped.text
        structured = shaped.json()["response"]["structured"]
        assert json.dumps(structured, separators=(", ", ": ")) in said2, (said2, structured)
