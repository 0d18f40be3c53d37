"""The HTTP side's check of a stored state, and the size it measures for the turn's size limit."""

from __future__ import annotations

import json
import math
import pathlib

from hosting.client._read import Unparsable, checked_state, state_problem
from hosting.stored import StoredDocument

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "state" / "fixtures"


def test_the_check_measures_the_size_the_limit_counts() -> None:
    # Non-ASCII text counts in UTF-8 bytes, as StoredDocument.size_bytes (the sessions list's
    # figure) counts it: the check's size replaces a second serialisation in each turn's submit.
    for path in sorted(FIXTURES.glob("state-*.json")):
        document = json.loads(path.read_bytes())
        checked = checked_state(document)
        assert checked.problem is None, path.name
        assert checked.size_bytes == StoredDocument(document).size_bytes() > 0, path.name


def test_a_state_the_entity_would_refuse_has_a_problem_and_no_size() -> None:
    document = json.loads((FIXTURES / "state-1.0.0-seed-sample.json").read_bytes())
    document["data"]["ttl"] = math.nan  # the SDK's lenient parser admits NaN; load_state does not
    checked = checked_state(document)
    assert checked.problem is not None and "not valid JSON" in checked.problem
    assert checked.size_bytes == 0 and state_problem(document) == checked.problem
    unparsable = "the state is not valid JSON: x"
    assert checked_state(Unparsable(unparsable)).problem == unparsable
