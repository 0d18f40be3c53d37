"""The versions, limits and names the code defines, as README.md and docs/*.md state them: every
mention is read back and compared with the code, so a change on one side fails here until the
other follows. (The problem-codes table is checked by test_error_codes.py, the agents' failure
codes by tests/agents/test_agents_failure_codes.py.)

Each fact also needs a least number of mentions the patterns find: a rewording that hides them
all from the patterns fails too, instead of passing with nothing checked."""

from __future__ import annotations

import ast
import json
import pathlib
import re
import subprocess
from collections.abc import Iterator
from typing import get_args

import pytest
from hosting_support import ROOT

from agents import Agent, AgentConfigurationError, ModelSettings
from agents._settings import DEFAULT_AZURE_API_VERSION
from hosting._app import _check_agents
from hosting._ids import MAX_ID_LENGTH
from hosting._settings import DEFAULT_MAX_SESSION_BYTES, MAX_BODY_BYTES, ApiSettings
from hosting.archive._settings import DEFAULT_ARCHIVE_AT_BYTES, DEFAULT_KEEP_BYTES
from hosting.entity._batch import BATCH_THREADS
from hosting.entity._deadline import DEFAULT_TURN_DEADLINE_SECONDS, MARGIN_SECONDS
from hosting.http._models import MultitaskStrategy
from hosting.http._sse import DEFAULT_HEARTBEAT_SECONDS, RECONNECT_MS
from hosting.lifecycle._ttl import DEFAULT_TTL
from hosting.mcp._config import DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, MIN_WAIT_SECONDS
from hosting.streams._store import DEFAULT_RETENTION_SECONDS
from state import CURRENT_SCHEMA_VERSION

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_VERSION = r"\d+\.\d+\.\d+"


def mentions(pattern: str, flags: int = 0) -> Iterator[tuple[str, str]]:
    """(where, first group) of every match of `pattern` in the docs; `where` is file:line."""
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(pattern, text, flags):
            line = text.count("\n", 0, match.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}", match.group(1)


def check(pattern: str, expected: str, at_least: int, flags: int = 0) -> None:
    found = list(mentions(pattern, flags))
    wrong = [f"{where}: {value!r}" for where, value in found if value != expected]
    assert not wrong, f"expected {expected!r}:\n" + "\n".join(wrong)
    assert len(found) >= at_least, f"only {len(found)} mention(s) of {pattern!r} left: reworded?"


def _number(value: float) -> str:
    return f"{value:g}"


# -- the state schema version -------------------------------------------------------------------

# Phrases that state the version written today ("schema 1.2.0" after "since"/"before"/"in" names
# the version that brought a field, which stays true).
_CURRENT_VERSION_PHRASES = [
    rf'CURRENT_SCHEMA_VERSION[^\n"]*"({_VERSION})"',  # `CURRENT_SCHEMA_VERSION = "1.4.0"`
    rf"\(current ({_VERSION})\)",  # "this build reads 1.x (current 1.4.0)"
    rf"always schemaVersion ({_VERSION})",
    rf'"schemaVersion": "({_VERSION})"',  # the sample of what dump_state writes
    rf"[Ss]tate version \**({_VERSION})",
    rf"(?:current|stored document|format)[^;]{{0,160}}?, version \**({_VERSION})",
    rf"current (?:state |schema )?version,? \**({_VERSION})",
    rf"(?<!since )(?<!before )(?<!in )(?<!from )\bschema ({_VERSION})",
]


@pytest.mark.parametrize("pattern", _CURRENT_VERSION_PHRASES)
def test_each_mention_of_the_current_state_version(pattern: str) -> None:
    check(pattern, CURRENT_SCHEMA_VERSION, at_least=0)


def test_the_current_state_version_is_stated() -> None:
    found = [m for p in _CURRENT_VERSION_PHRASES for m in mentions(p)]
    assert len(found) >= 4, found


# -- names and ids ------------------------------------------------------------------------------


def _longest_accepted(accepts: object, limit: int = 200) -> int:
    """The longest name `accepts` takes, probing lengths (the code's own rule, not a copy of it)."""
    assert callable(accepts)
    longest = 0
    for length in range(1, limit):
        try:
            accepts("a" * length)
        except AgentConfigurationError:
            continue
        longest = length
    return longest


def test_agent_name_limits() -> None:
    model = ModelSettings(model="m", base_url="http://127.0.0.1:9/v1", api_key="k")
    agent_limit = _longest_accepted(lambda name: Agent(name=name, model=model))
    hosted_limit = _longest_accepted(lambda name: _check_agents([Agent(name=name, model=model)]))
    assert 0 < hosted_limit < agent_limit
    # "1-64 letters, digits, ..." (the Agent's own rule)
    check(r"\b1[-\u2013](\d+) letters, digits", str(agent_limit), at_least=1)
    # "hosted agent names ... at most 60 characters" (build_app's rule)
    check(r"[Hh]osted agent names?\b[^.]*?at most \**(\d+)\** characters", str(hosted_limit), at_least=2)
    # the rule as a regular expression: "[A-Za-z][A-Za-z0-9_-]{0,59}"
    check(r"`\[A-Za-z\]\[A-Za-z0-9_-\]\{0,(\d+)\}`", str(hosted_limit - 1), at_least=1)


def test_id_limits() -> None:
    # "1-128 characters", "1-128 printable ASCII", "1-128 chars" (with a hyphen or an en dash)
    check(r"\b1[-\u2013](\d+) (?:characters|chars|printable)", str(MAX_ID_LENGTH), at_least=3)


# -- versions pinned elsewhere in the repository ------------------------------------------------


def test_the_azurite_version_is_the_one_ci_installs() -> None:
    services = (ROOT / ".ci" / "services.sh").read_text()
    pinned = re.search(r"^AZURITE_VERSION=(\S+)", services, re.MULTILINE)
    assert pinned is not None
    check(r"azurite@([\w.-]+)", pinned.group(1), at_least=1)
    # "npm install -g azurite" installs whatever is newest: a pin is what makes it the tested one.
    check(r"npm install(?:\s+-\S+)*\s+(azurite\S*)", f"azurite@{pinned.group(1)}", at_least=1)


def test_the_azure_openai_api_version_is_the_default() -> None:
    sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    assert sample["AZURE_OPENAI_API_VERSION"] in ("", DEFAULT_AZURE_API_VERSION)
    check(r"default API version `([^`]+)`", DEFAULT_AZURE_API_VERSION, at_least=1)
    check(r"AZURE_OPENAI_API_VERSION[=:\"` ]+(\d{4}-\d\d-\d\d[\w-]*)", DEFAULT_AZURE_API_VERSION, at_least=0)


def test_host_json_values() -> None:
    host = json.loads((ROOT / "host.json").read_text())
    durable = host["extensions"]["durableTask"]
    values = {
        "functionTimeout": host["functionTimeout"],
        "routePrefix": host["extensions"]["http"]["routePrefix"],
        "maxQueuePollingInterval": durable["storageProvider"]["maxQueuePollingInterval"],
        **{k: str(v) for k, v in durable.items() if k.startswith(("maxConcurrent", "maxEntity"))},
    }
    found = 0
    for key, value in values.items():
        # "`storageProvider.maxQueuePollingInterval` `00:00:02`", "| `maxConcurrentEntityFunctions` |
        # ... | `256` |" (the value in the table's last column), "`maxConcurrentEntityFunctions` (256,"
        for pattern in (
            rf"`(?:[\w.]*\.)?{key}`\**:? `([^`]+)`",
            rf"^\| `{key}` \|[^\n]*\| `([^`]+)` \|$",
            rf"`{key}` \((\d+),",
        ):
            check(pattern, value, at_least=0, flags=re.MULTILINE)
            found += len(list(mentions(pattern, re.MULTILINE)))
    assert found >= len(values), found
    bundle = host["extensionBundle"]["version"]
    # Any range spelled like a bundle's, wildcards included ("[4.*, 5.0.0)").
    check(r"(\[\d+(?:\.(?:\d+|\*))*, \d+(?:\.\d+)*\))", bundle, at_least=2)
    floor = re.match(r"\[([\d.]+),", bundle)
    assert floor is not None
    check(r"bundle (\d+\.\d+\.\d+) (?:or later|is the first)", floor.group(1), at_least=1)


def test_the_thread_count() -> None:
    sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    count = sample["PYTHON_THREADPOOL_THREAD_COUNT"]
    infra = (ROOT / "infra" / "resources.bicep").read_text()
    assert f"name: 'PYTHON_THREADPOOL_THREAD_COUNT', value: '{count}'" in infra
    check(r"PYTHON_THREADPOOL_THREAD_COUNT[`'\"*|=: ]{1,8}(\d+)", count, at_least=1)
    check(r"^\| `PYTHON_THREADPOOL_THREAD_COUNT` \|[^\n]*\| `(\d+)`", count, at_least=1, flags=re.MULTILINE)



def test_the_batch_threads() -> None:
    # More threads than the host sends batches at once (on either backend), so none waits for one.
    durable = json.loads((ROOT / "host.json").read_text())["extensions"]["durableTask"]
    at_once = max(durable["maxConcurrentOrchestratorFunctions"], durable["maxConcurrentEntityFunctions"])
    assert at_once < BATCH_THREADS
    check(rf"(\d+),? above (?:the )?{at_once}\b", str(BATCH_THREADS), at_least=2)
    check(r"up to (\d+) of hosting's threads", str(BATCH_THREADS), at_least=1)


# -- limits -------------------------------------------------------------------------------------


def test_the_body_limit() -> None:
    sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    assert sample["FUNCTIONS_REQUEST_BODY_SIZE_LIMIT"] == str(MAX_BODY_BYTES)
    infra = (ROOT / "infra" / "resources.bicep").read_text()
    assert f"name: 'FUNCTIONS_REQUEST_BODY_SIZE_LIMIT', value: '{MAX_BODY_BYTES}'" in infra
    check(r"FUNCTIONS_REQUEST_BODY_SIZE_LIMIT[`'\"*|=: ]{1,8}(\d+)", str(MAX_BODY_BYTES), at_least=2)
    kib = str(MAX_BODY_BYTES // 1024)
    check(r"\b[Bb]od(?:y|ies)\b[^.\n]{0,40}?\b(\d+) ?KiB", kib, at_least=4)
    check(r"\b(\d+) ?KiB[^.\n]{0,12}\b(?:the API's own limit|\(the API's own limit\))", kib, at_least=0)


def test_the_turn_deadline() -> None:
    deadline, margin = _number(DEFAULT_TURN_DEADLINE_SECONDS), _number(MARGIN_SECONDS)
    # "a turn deadline of 180 s", "`DURABLE_AGENTS_TURN_DEADLINE_SECONDS`, default **180 s**",
    # "one turn's time, 180 s by default", "at their 180 s deadline", "| one turn's time | 180 s"
    check(r"turn\s+deadline\s+of\s+(\d+) s", deadline, at_least=1)
    check(r"TURN_DEADLINE_SECONDS`?,?\s+default\s+\**(\d+) s", deadline, at_least=1)
    check(r"one turn's time,? \|? ?(\d+) s", deadline, at_least=2)
    check(r"at\s+their\s+(\d+) s\s+deadline", deadline, at_least=1)
    # "a margin of 60 s", "less its 60 s margin"
    check(r"margin\s+of\s+(\d+) s", margin, at_least=1)
    check(r"less\s+its\s+(\d+) s\s+margin", margin, at_least=1)


def test_the_mcp_wait() -> None:
    default, most, least = (_number(v) for v in (DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, MIN_WAIT_SECONDS))
    # The text after each mention of the setting, or of a tool call's wait, up to the sentence's end.
    windows = list(mentions(r"((?:DURABLE_AGENTS_MCP_WAIT_SECONDS|MCP tool call waits)[^.]*(?:\.\d[^.]*)*)"))
    assert len(windows) >= 4, windows
    wrong: list[str] = []
    for where, text in windows:
        for pattern, expected in [
            (r"\(?default:? (\d+(?:\.\d+)?)", default),
            (r"(\d+(?:\.\d+)?) ?s? by default", default),
            (r"at most (\d+(?:\.\d+)?)", most),
            (r"refused past (\d+(?:\.\d+)?)", most),
            (r"(\d+(?:\.\d+)?) s? ?to\s+(\d+(?:\.\d+)?)", least),
        ]:
            for match in re.finditer(pattern, text):
                if match.group(1) != expected:
                    wrong.append(f"{where}: {match.group(0)!r}, the code: {expected}")
                if match.lastindex == 2 and match.group(2) != most:
                    wrong.append(f"{where}: {match.group(0)!r}, the code: at most {most}")
    assert not wrong, "\n".join(wrong)


def test_the_waits_of_a_run() -> None:
    settings = ApiSettings(public_base_url=None, max_session_bytes=DEFAULT_MAX_SESSION_BYTES)
    answer, poll = _number(settings.response_wait_seconds), _number(settings.max_poll_wait_seconds)
    # "POST .../run` waits up to 30 s", "(at most **30 s**, `ApiSettings.response_wait_seconds`)",
    # "| wait of `POST .../run` | 30 s, then 202 |"
    check(r"/run`? waits (?:up to|at most) \**(\d+) s", answer, at_least=0)
    check(r"\b(\d+) s\**,? `ApiSettings\.response_wait_seconds`", answer, at_least=1)
    check(r"\| wait of `POST \.\.\./run` \| (\d+) s", answer, at_least=1)
    # "`?wait=` long-polls up to 60 s", "| `?wait=` of the run resource | 0-60 s |"
    check(r"\?wait=`? (?:long-polls )?up to (\d+) s", poll, at_least=1)
    check(r"\| `\?wait=` of the run resource \| 0[-\u2013](\d+) s", poll, at_least=1)


def test_the_session_size_limit() -> None:
    kib = str(DEFAULT_MAX_SESSION_BYTES // 1024)
    # "`ApiSettings.max_session_bytes` (default **960 KiB**", "`max_session_bytes` (960 KiB)",
    # "A single turn's limit: 960 KiB", "| one turn | 960 KiB"
    check(r"max_session_bytes(?:=\.\.\.\))?`? \((?:default )?\**(\d+) KiB", kib, at_least=3)
    check(r"single turn's limit: (\d+) KiB", kib, at_least=0)
    check(r"\| one turn \| (\d+) KiB", kib, at_least=1)


def test_the_runtime_version_is_the_pinned_one() -> None:
    pinned = re.search(
        r"^azure-functions-runtime==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.MULTILINE
    )
    assert pinned is not None
    # "`azure-functions-runtime` 1.3.0", "the app pins 1.3.0"
    check(r"azure-functions-runtime`? (\d+\.\d+\.\d+)", pinned.group(1), at_least=1)
    check(r"the app pins (\d+\.\d+\.\d+)", pinned.group(1), at_least=1)


def test_setting_defaults() -> None:
    check(r"`DURABLE_AGENTS_ARCHIVE_AT_BYTES` \| (\d+) \|", str(DEFAULT_ARCHIVE_AT_BYTES), at_least=1)
    check(r"`DURABLE_AGENTS_ARCHIVE_KEEP_BYTES` \| (\d+) \|", str(DEFAULT_KEEP_BYTES), at_least=1)
    heartbeat = _number(DEFAULT_HEARTBEAT_SECONDS)
    # "idle for 15 s (`DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS`", "| SSE heartbeat | every 15 s",
    # "closes idle connections sooner than 15 s"
    check(r"idle for (\d+) s \(`DURABLE_AGENTS_STREAM_HEARTBEAT_SECONDS`", heartbeat, at_least=1)
    check(r"\| SSE heartbeat \| every (\d+) s", heartbeat, at_least=1)
    check(r"idle connections sooner than (\d+) s", heartbeat, at_least=0)
    # "**`retry: 500`**", "carries `retry: 500`"
    check(r"`retry: (\d+)`", str(RECONNECT_MS), at_least=2)
    # "(default **3600**, one hour)", "| retention of a run's events | 1 hour", "retention (1 hour)"
    check(r"STREAM_RETENTION_SECONDS` \|[^|\n]*default \**(\d+)", str(DEFAULT_RETENTION_SECONDS), at_least=1)
    hours = str(DEFAULT_RETENTION_SECONDS // 3600)
    check(r"\| retention of a run's events \| (\d+) hours?", hours, at_least=1)
    check(r"retention \((\d+) hours?\)", hours, at_least=0)
    # "| idle session | 30 days", "default 30 days"
    check(r"\| idle session \| (\d+) days", str(DEFAULT_TTL.days), at_least=1)
    check(
        r"`DURABLE_AGENTS_SESSION_TTL__\{agent\}` \(one agent\); default (\d+) days",
        str(DEFAULT_TTL.days),
        at_least=0,
    )


# -- function_app.py ----------------------------------------------------------------------------


def _code_of_function_app() -> str:
    """function_app.py without its module docstring."""
    source = (ROOT / "function_app.py").read_text()
    tree = ast.parse(source)
    first = tree.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    assert first.end_lineno is not None
    return "\n".join(source.splitlines()[first.end_lineno :]).strip() + "\n"


def test_the_function_app_snippets_are_the_file() -> None:
    code = _code_of_function_app()
    app_line = next(line for line in code.splitlines() if line.startswith("app = "))
    snippets = [
        (where, block)
        for where, block in mentions(r"```python\n(.*?)```", re.DOTALL)
        if app_line.split(",")[0] in block and "from examples.catalog import AGENTS" in block
    ]
    # docs/hosting.md shows the whole file ("function_app.py is just:"); an example that builds an
    # app of its own (`build_app([*AGENTS, mine])`) is not a copy of the file and is left alone.
    assert any(where.startswith("docs/hosting.md") for where, _ in snippets), snippets
    stale = [where for where, block in snippets if block.strip() + "\n" != code]
    assert not stale, f"these blocks differ from function_app.py:\n{stale}\nthe file:\n{code}"
    # Tree listings name the file with its `app = ...` line.
    listed = list(mentions(r"function_app\.py +(app = [^\n]*?)\s*$", re.MULTILINE))
    assert listed, "no listing shows function_app.py's app line"
    assert all(line == app_line for _, line in listed), (app_line, listed)


# -- what the text speaks of --------------------------------------------------------------------

# Phrases about how the code was built rather than what it does. A citation of another project's
# tracker ("azure-functions-host issues #10098", "python/cpython#106905") says where a fact comes
# from and is not matched.
_PROCESS_PHRASES = re.compile(
    r"\b(?:this|previous|earlier|last|the) submission\b|\bsubmitted code\b|\bcode as submitted\b"
    r"|\b(?:the|this|that|an?) issue(?:'s|s)?\b(?! #)|\bissue \d+\b|\bfinal code\b|\bfirst version\b"
    r"|\bour first version\b|\bhas not landed\b",
    re.IGNORECASE,
)
_TEXT_SUFFIXES = {".md", ".py", ".js", ".html", ".css", ".sh", ".yml", ".yaml", ".bicep", ".toml", ".txt"}


def test_no_text_speaks_of_how_it_was_built() -> None:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    paths = [
        ROOT / name
        for name in listed.stdout.splitlines()
        if (pathlib.PurePath(name).suffix in _TEXT_SUFFIXES or name.endswith("Makefile"))
        and "/vendor/" not in name
        and name != "tests/hosting/test_docs_facts.py"
    ]
    assert len(paths) > 100, len(paths)
    found = []
    for path in paths:
        if not path.is_file():  # deleted in the work tree, not yet in the index
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in _PROCESS_PHRASES.finditer(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    assert not found, "say what the product does (a commit id or a date for a comparison):\n" + "\n".join(
        found
    )


# -- the multitask strategies --------------------------------------------------------------------


def test_every_multitask_strategy_is_documented_and_none_is_said_to_be_missing() -> None:
    strategies = set(get_args(MultitaskStrategy))
    text = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    [field_list] = re.findall(r"`multitask_strategy` \((`enqueue` default[^;]*);", text)
    assert set(re.findall(r"`(\w+)`", field_list)) == strategies
    rows = set(re.findall(r"^\| `(\w+)`(?: \(default\))? \|", text, re.MULTILINE)) & strategies
    assert rows == strategies  # the strategies table has a row for each
    said_missing = [s for s in strategies if re.search(rf"`{s}`[^.]*\bis not offered\b", text)]
    assert said_missing == []


def test_the_requirements_cite_modules_that_exist() -> None:
    # Each requirement's comment names the code that needs it; a module moved or gone leaves a
    # requirement no one can account for.
    module_path = r"(?<![\w/])((?:hosting|agents|state|devhost|bench|tests)/[\w/]+\.py)\b"
    cited = [
        (path.name, module)
        for path in sorted(ROOT.glob("requirements*.txt"))
        for module in re.findall(module_path, path.read_text())
    ]
    assert cited
    missing = [f"{name}: {module}" for name, module in cited if not (ROOT / module).is_file()]
    assert not missing, missing


def test_the_users_own_settings_survive_a_provision() -> None:
    # azd writes the app's whole settings list on every provision: the settings a user keeps in
    # azd's APP_SETTINGS must reach that list, or a provision wipes them (docs/deploy.md).
    parameters = json.loads((ROOT / "infra" / "main.parameters.json").read_text())["parameters"]
    assert parameters["appSettings"] == {"value": "${APP_SETTINGS={}}"}
    main = (ROOT / "infra" / "main.bicep").read_text()
    assert re.search(r"@secure\(\)\n@description\([^\n]*\)\nparam appSettings string\n", main)
    assert re.search(r"\n    appSettings: appSettings\n", main)  # handed to resources.bicep
    resources = (ROOT / "infra" / "resources.bicep").read_text()
    assert "var userSettings = [for setting in items(json(appSettings)):" in resources
    [listed] = re.findall(r"appSettings: concat\(([^)]*)\)", resources)
    assert "userSettings" in [name.strip() for name in listed.split(",")]
    assert "azd env set APP_SETTINGS" in (ROOT / "docs" / "deploy.md").read_text()
