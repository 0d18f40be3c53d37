"""What every agent route looks up first: the hosted agent its `{agent}` names, and for session
routes the session itself (404 when there is none); for run routes, the owner a pending run's
claim names (404 for another user's, as their session is once stored)."""

from __future__ import annotations

from collections.abc import Mapping

import azure.durable_functions as df
import azure.functions as func

from agents import Agent

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from ..client import DurableClient, Snapshot, read_session
from ..streams import StreamKey, StreamStore, StreamStoreUnavailable, claimed_user
from ._refusals import no_session
from ._requests import check_id
from ._users import caller_user


def hosted_agent(agents: Mapping[str, Agent], req: func.HttpRequest) -> Agent:
    """The agent the route's `{agent}` names; 404 `unknown_agent` naming the hosted agents."""
    name = req.route_params.get("agent", "")
    agent = agents.get(name)
    if agent is None:
        raise ProblemError(
            ProblemCode.UNKNOWN_AGENT,
            f"there is no agent {name!r}; hosted agents: {', '.join(sorted(agents))}",
            field="agent",
        )
    return agent


async def existing_session(
    agents: Mapping[str, Agent], req: func.HttpRequest, client: DurableClient
) -> tuple[Agent, str, df.EntityId, Snapshot]:
    """The route's agent, session id, entity id and stored snapshot; 404 for no such session, and
    for one that belongs to another user than the one the caller acts for (hosting.http._users)."""
    agent = hosted_agent(agents, req)
    session_id = check_id(req.route_params.get("session_id", ""), "session_id")
    user = caller_user(req)
    entity_id = df.EntityId(entity_name(agent.name), session_id)
    snapshot = await read_session(client, entity_id)
    if not snapshot.exists or not snapshot.stored.visible_to(user):
        raise no_session(agent.name, session_id)
    return agent, session_id, entity_id, snapshot


async def claimed_by_other(store: StreamStore, key: StreamKey, user: str | None) -> bool | None:
    """Whether the run's claim in the stream store names another user than `user` (before its
    session is stored, the claim is what knows whose run it is: hosting.http._users
    `claim_identity`; a run of no one in particular is everyone's); None when it has no claim, or
    the store cannot tell (the stored session's owner is checked all the same)."""
    try:
        claim = await store.claimed(key)
    except StreamStoreUnavailable:
        return None
    if claim is None:
        return None
    owner = claimed_user(claim.request_hash)[1]
    return owner is not None and owner != user
