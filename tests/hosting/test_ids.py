"""Id validation and derivation: properties over generated strings."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from hosting._ids import (
    ID_PATTERN_TEXT,
    MAX_ID_LENGTH,
    correlation_id_for_key,
    id_problem,
    idempotency_key_problem,
    new_session_id,
    session_id_for_key,
)

SAFE = re.compile(r"[A-Za-z0-9._~-]{1,128}")


@settings(max_examples=200)
@given(st.text(max_size=140))
def test_an_id_is_accepted_exactly_when_it_is_short_url_safe_text(value: str) -> None:
    problem = id_problem(value)
    assert (problem is None) == (SAFE.fullmatch(value) is not None and value not in (".", ".."))
    if any(c in value for c in "@/ \x00\n\t") or not value or len(value) > MAX_ID_LENGTH:
        assert problem is not None
    # The pattern published in the OpenAPI document says the same.
    assert (problem is None) == (re.fullmatch(ID_PATTERN_TEXT, value) is not None)


@settings(max_examples=200)
@given(st.text(alphabet="._~a-", max_size=6))
def test_the_published_pattern_agrees_on_dot_heavy_ids(value: str) -> None:
    assert (id_problem(value) is None) == (re.fullmatch(ID_PATTERN_TEXT, value) is not None)


def test_dot_segments_are_refused() -> None:
    for value in (".", ".."):
        problem = id_problem(value)
        assert problem is not None and "dot segment" in problem
    assert id_problem("...") is None and id_problem(".a") is None


@settings(max_examples=100)
@given(
    st.text(
        min_size=1, max_size=MAX_ID_LENGTH, alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E)
    )
)
def test_printable_keys_are_accepted_and_derive_stable_valid_ids(key: str) -> None:
    assert idempotency_key_problem(key) is None
    session = session_id_for_key("assistant", key)
    assert session == session_id_for_key("assistant", key)
    assert session != session_id_for_key("writer", key)
    run = correlation_id_for_key("assistant", session, key)
    assert id_problem(session) is None and id_problem(run) is None
    assert run != correlation_id_for_key("assistant", session + "x", key)


@given(st.text(max_size=5).filter(lambda k: any(not 0x21 <= ord(c) <= 0x7E for c in k) or not k))
def test_keys_with_spaces_or_control_characters_are_refused(key: str) -> None:
    assert idempotency_key_problem(key) is not None


def test_new_session_ids_are_unique_and_valid() -> None:
    ids = {new_session_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and id_problem(i) is None for i in ids)
