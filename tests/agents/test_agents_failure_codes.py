"""`agents.FailureCode` is the one list of our failure codes: docs/agents.md lists exactly it,
and the runtime names its failures with it (no bare code strings)."""

from __future__ import annotations

import pathlib
import re

import pytest

from agents import FailureCode, ModelCallError
from agents._settings import Endpoint, check_requests_allowed

ROOT = pathlib.Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"<!-- failure-codes:start[^>]*-->\n(?P<table>.*?)<!-- failure-codes:end -->", re.DOTALL)


def test_docs_list_every_failure_code_in_order() -> None:
    match = _BLOCK.search((ROOT / "docs" / "agents.md").read_text())
    assert match is not None, "docs/agents.md has no failure-codes block"
    listed = re.findall(r"^\| `([a-z_]+)` \|", match.group("table"), re.MULTILINE)
    assert listed == [str(c) for c in FailureCode]


def test_codes_are_distinct_snake_case_values() -> None:
    values = [str(c) for c in FailureCode]
    assert len(set(values)) == len(values)
    assert all(re.fullmatch(r"[a-z][a-z_]*", v) for v in values)


def test_refused_endpoints_fail_with_the_enum_code() -> None:
    endpoint = Endpoint("openai", "m", "https://example.invalid/v1", "k")
    with pytest.raises(ModelCallError) as caught:
        check_requests_allowed(endpoint, {"DURABLE_AGENTS_ALLOW_MODEL_REQUESTS": "0"})
    assert caught.value.code == FailureCode.MODEL_REQUESTS_DISABLED
    assert caught.value.retryable is False
