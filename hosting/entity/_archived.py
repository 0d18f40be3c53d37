"""The entity's side of archived history that is not archiving itself: answering a retried run
whose entries were archived, from the chunks (never running it again)."""

from __future__ import annotations

from agents import Agent, TurnRequest
from state import AgentState

from .._errors import RunConflict
from .._loop import run_sync
from ..archive import HistoryArchive, archived_run
from ..stored import StoredDocument
from ._wire import TurnResultJson, turn_json


def answer_archived(
    archive: HistoryArchive, entity: str, key: str, state: AgentState, request: TurnRequest, agent: Agent
) -> TurnResultJson | None:
    """The recorded result of `request`'s correlation id when its run was archived, else None.

    Raises `RunConflict` when that id answered a different request, and `state.HistoryUnavailable`
    when its chunk cannot be read (the operation then fails and changes nothing).
    """
    document = StoredDocument.of_state(state)
    if not document.is_archived_run(request.correlation_id):
        return None
    run = run_sync(lambda: archived_run(archive, entity, key, document, request.correlation_id))
    if run is None:
        return None
    if not agent.same_request(request, run.request_hash, run.request):
        raise RunConflict(request.correlation_id)
    return turn_json(run.result())
