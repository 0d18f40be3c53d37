"""The user id a signed-in principal is stored under: any principal id gives a valid user id,
ids that are valid already are kept (data stored under them stays theirs), and a digest can be
no principal's own id."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hosting._ids import id_problem
from hosting.http._users import MAPPED_USER_PREFIX, stored_user_id


@given(st.text(min_size=1, max_size=300), st.sampled_from(["", "aad", "auth0", "github"]))
def test_every_principal_id_gives_a_valid_user_id(principal: str, provider: str) -> None:
    user = stored_user_id(provider, principal)
    assert id_problem(user) is None
    assert user == stored_user_id(provider, principal)
    if id_problem(principal) is None and not principal.startswith(MAPPED_USER_PREFIX):
        assert user == principal
    else:
        assert user.startswith(MAPPED_USER_PREFIX) and len(user) == 41


def test_ids_that_are_not_url_safe_are_told_apart_by_provider_and_id() -> None:
    ids = ["auth0|abc", "auth0|abd", "a:b", "a@b", "a+b", "a/b", "a b", "x" * 129]
    users = {stored_user_id(provider, principal) for principal in ids for provider in ("auth0", "github")}
    assert len(users) == 2 * len(ids)
    # A principal whose id looks like a digest is mapped too: no one's own id is another's digest.
    mapped = stored_user_id("auth0", "auth0|abc")
    assert stored_user_id("auth0", mapped) != mapped
    entra = "6f1c2d9e-1234-4abc-9def-0123456789ab"
    assert stored_user_id("aad", entra) == entra
