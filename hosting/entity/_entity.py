"""The durable entity of one hosted agent: one instance per session, the operations of
hosting.entity._operations (run, step, cancel, decide, reset, delete, get, expire, ...).

`AgentEntity` is the entity function the SDK calls once per operation of a batch: it holds the
agent's `EntityServices` and hands each operation to its handler.
"""

from __future__ import annotations

from agents import Agent
from state import TurnFailure

from .._settings import DEFAULT_MAX_SESSION_BYTES
from .._wakeup import session_operation
from ..archive import HistoryArchive
from ..streams import StreamStore
from ._context import EntityContext, stored_text
from ._deadline import TimeLimits
from ._operations import OPERATIONS, operate
from ._services import EntityServices
from ._steps import fail_step
from ._turns import RunDiscarded, run
from ._wire import RunAnswer, TurnResultJson

__all__ = ["OPERATIONS", "AgentEntity", "RunDiscarded"]


class AgentEntity:
    """The entity function of one agent; the SDK calls it once per operation of a batch."""

    def __init__(
        self,
        agent: Agent,
        max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES,
        archive: HistoryArchive | None = None,
        streams: StreamStore | None = None,
        limits: TimeLimits | None = None,
    ) -> None:
        self.services = EntityServices(
            agent,
            TimeLimits.from_env() if limits is None else limits,
            max_session_bytes,
            streams,
            archive,
        )

    @property
    def name(self) -> str:
        """The entity's name, `dafx-{agent}`."""
        return self.services.name

    @property
    def limits(self) -> TimeLimits:
        """The turn deadline and the batch budget (hosting.entity._deadline)."""
        return self.services.limits

    def __call__(self, context: EntityContext) -> None:
        # Callers waiting in this process for this session wake when the operation ends.
        with session_operation(self.name, str(context.entity_key)):
            try:
                operate(self.services, context)
            finally:
                if stored_text(context) is None:
                    # An operation that stored nothing leaves no entity: the SDK's `set_result`
                    # marks the entity as existing, and the extension would then keep one with
                    # a `null` state (a signal to a deleted session, an approval's expiry after
                    # an erasure, would bring it back as a session nobody can read).
                    context.destruct_on_exit()

    def fail_run(self, context: EntityContext, error: TurnFailure) -> RunAnswer:
        """Answer the `run` operation in `context` without running it: recorded as a failed turn
        with `error` (hosting.entity._batch, when the SDK failed the batch), unless it has an
        answer already."""
        return run(self.services, context, unfinished=error)

    def fail_step(self, context: EntityContext, error: TurnFailure) -> TurnResultJson | None:
        """Answer the `step` operation in `context` without running it: its turn is recorded as a
        failed turn with `error` (hosting.entity._batch), so its caller is answered."""
        return fail_step(self.services, context, error)
