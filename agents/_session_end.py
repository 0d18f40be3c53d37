"""Running the providers' `on_session_ended` hooks for one ended session.

The host captures the ended session (`ended_session`) before its state goes and hands it, as
JSON, to a durable activity that calls `run_session_ended`; a hook that raises fails the activity,
which the host retries (hosting.lifecycle._ended), so every hook runs at least once per end and
must be idempotent (`SessionEnd.key`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from state import AgentState, ChatMessage, TextContent

from ._context import ContextProvider, EndReason, SessionEnd
from ._model import ModelCaller
from ._settings import ModelSettings, resolve_endpoint
from ._turns import answer_text

log = logging.getLogger("agents")

END_REASONS: tuple[EndReason, ...] = ("reset", "delete", "expiry")


def wants_session_end(providers: Sequence[ContextProvider]) -> bool:
    """Whether any of the agent's providers has an `on_session_ended` hook."""
    return any(p.has_session_end for p in providers)


def ended_session(
    agent: str,
    session_id: str,
    reason: EndReason,
    state: AgentState,
    epoch: str | None = None,
    ended_at: str | None = None,
) -> dict[str, Any] | None:
    """The JSON a session-end hook gets, captured from the session's state before it goes (None
    for a session with no finished turn: nothing to tell). `key` names this life of the session:
    its archive epoch, else its first run's correlation id, hashed with the session id;
    `endedAt` (RFC 3339), when the host ended it (what an erasure of the user is compared with)."""
    messages = [dict(m) for m in state.replay_wire()]
    if not messages and not epoch:
        return None
    first = next((e.get("correlationId") for e in state.raw_entries()), None)
    life = epoch or str(first or "")
    key = hashlib.sha256(f"{session_id}\n{life}".encode()).hexdigest()[:32]
    return {
        "agent": agent,
        "session": session_id,
        "user": state.user_id,
        "reason": reason,
        "key": key,
        "endedAt": ended_at,
        "messages": messages,
    }


async def run_session_ended(
    providers: Sequence[ContextProvider],
    model: ModelSettings,
    spec: Mapping[str, Any],
    erased: Callable[[], Awaitable[bool]] | None = None,
) -> int:
    """Call every provider's `on_session_ended` with the ended session `spec` (as
    `ended_session` made it); answer how many hooks ran. A hook's exception propagates.
    `erased` answers whether the user's data was erased since the session ended (the host's
    check, `SessionEnd.erased`): when it is already, no hook runs."""

    async def complete(prompt: str, instructions: str | None, settings: ModelSettings | None) -> str:
        chosen = settings or model
        caller = ModelCaller(chosen, resolve_endpoint(chosen), str(spec["agent"]))
        output = await caller.call(
            instructions=instructions or "",
            messages=[ChatMessage(role="user", contents=[TextContent(text=prompt)])],
        )
        return answer_text([output.message])

    reason = spec["reason"]
    if reason not in END_REASONS:
        raise ValueError(f"unknown end reason {reason!r}")
    end = SessionEnd(
        agent_name=str(spec["agent"]),
        session_id=str(spec["session"]),
        user_id=spec.get("user"),
        reason=reason,
        key=str(spec["key"]),
        messages=[
            ChatMessage.model_validate(m, by_alias=True, by_name=False) for m in spec.get("messages", [])
        ],
        _complete=complete,
        _erased=erased,
    )
    if end.user_id is not None and await end.erased():
        log.info("session %s of %s ended (%s): its user's data was erased since; no hook ran",
                 end.session_id, end.agent_name, reason)
        return 0
    ran = 0
    for provider in providers:
        if provider.has_session_end:
            await provider.on_session_ended(end)
            ran += 1
    log.info("session %s of %s ended (%s): %d hook(s) ran", end.session_id, end.agent_name, reason, ran)
    return ran
