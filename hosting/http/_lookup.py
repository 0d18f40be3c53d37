"""What every agent route looks up first: the hosted agent its `{agent}` names, and for session
routes the session itself (404 when there is none)."""

from __future__ import annotations

from collections.abc import Mapping

import azure.durable_functions as df
import azure.functions as func

from agents import Agent

from .._errors import ProblemCode, ProblemError
from .._ids import entity_name
from ..client._read import DurableClient, Snapshot, read_session
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
