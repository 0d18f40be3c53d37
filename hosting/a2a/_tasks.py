"""A task is a run: its id names the run's session and correlation id (`{session}:{correlation}`,
':' being no id character, so one split reads it back), and its state is what the run's outcome
says. The rendering here turns a run's outcome into the A2A `Task` (the SDK's own types)."""

from __future__ import annotations

from dataclasses import dataclass

from a2a.types import a2a_pb2 as pb

from agents import TurnResult

from .._ids import id_problem
from ..stored import RunApprovals

_SEPARATOR = ":"
CANCELLED_CODE = "run_cancelled"
REJECTED_CODES = frozenset({"content_filter"})
"""Failure codes that mean the agent (its model) refused the request: the task is `rejected`."""
ANSWER_ARTIFACT = "answer"
TERMINAL = frozenset(
    {pb.TASK_STATE_COMPLETED, pb.TASK_STATE_FAILED, pb.TASK_STATE_CANCELED, pb.TASK_STATE_REJECTED}
)


@dataclass(frozen=True)
class TaskRef:
    """The run a task id names (the agent is the route's)."""

    agent: str
    session_id: str
    correlation_id: str

    @property
    def task_id(self) -> str:
        return f"{self.session_id}{_SEPARATOR}{self.correlation_id}"


def decode_task_id(agent: str, value: str) -> TaskRef | None:
    """The run `value` names, or None when it is no task id this app hands out."""
    session, _, correlation = value.partition(_SEPARATOR)
    if id_problem(session) or id_problem(correlation):
        return None  # not ids the product could have stored: never sent on to an entity
    return TaskRef(agent, session, correlation)


def text_part(text: str) -> pb.Part:
    return pb.Part(text=text)


def agent_message(ref: TaskRef, suffix: str, parts: list[pb.Part]) -> pb.Message:
    return pb.Message(
        message_id=f"{ref.correlation_id}-{suffix}",
        context_id=ref.session_id,
        task_id=ref.task_id,
        role=pb.ROLE_AGENT,
        parts=parts,
    )


def approvals_message(ref: TaskRef, awaiting: RunApprovals) -> pb.Message:
    """What an `input-required` task says: the calls that wait, in words and as data (their ids
    are what a decision names)."""
    waiting = awaiting.waiting
    lines = [f"- {a.call_id}: {a.name}({a.arguments})" for a in waiting]
    text = (
        "The run waits for approval of these tool calls; send a message in this task with a data "
        'part {"approvals": [{"id": ..., "approved": true|false}]} or the text "approve" / "reject" '
        "(all of them):\n" + "\n".join(lines)
    )
    data = {"approvals": [{"id": a.call_id, "name": a.name, "arguments": a.arguments} for a in waiting]}
    part = pb.Part()
    part.data.struct_value.update(data)
    return agent_message(ref, f"approval-{awaiting.step}", [text_part(text), part])


def finished_task(ref: TaskRef, result: TurnResult) -> pb.Task:
    """A finished run: completed with its answer as the artifact, or failed/canceled/rejected
    with a status message saying why."""
    failure = result.error
    if failure is None:
        artifact = pb.Artifact(artifact_id=ANSWER_ARTIFACT, name="answer", parts=[text_part(result.text)])
        return task(ref, pb.TASK_STATE_COMPLETED, artifacts=[artifact])
    if failure.code == CANCELLED_CODE:
        state = pb.TASK_STATE_CANCELED
    elif failure.code in REJECTED_CODES:
        state = pb.TASK_STATE_REJECTED
    else:
        state = pb.TASK_STATE_FAILED
    why = f"{failure.code}: {failure.message}" if failure.message else failure.code
    return task(ref, state, agent_message(ref, "status", [text_part(why)]))


def task(
    ref: TaskRef,
    state: int,
    message: pb.Message | None = None,
    artifacts: list[pb.Artifact] | None = None,
) -> pb.Task:
    status = pb.TaskStatus(state=pb.TaskState.Name(state))
    if message is not None:
        status.message.CopyFrom(message)
    status.timestamp.GetCurrentTime()
    return pb.Task(id=ref.task_id, context_id=ref.session_id, status=status, artifacts=artifacts or [])
