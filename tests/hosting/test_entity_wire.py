"""The entity's answers as the batch response carries them, byte for byte: the HTTP side,
orchestrations and stored results read this JSON, so its keys keep their names and their order
(hosting.entity._wire), and every operation name has its handler."""

from __future__ import annotations

import json

import azure.durable_functions as df
import pytest
from hosting_support import run_op
from test_approval_entity import _paused, approvals_app  # noqa: F401 (the app fixture)
from test_turn_steps import _batch, _signalled, steps_app  # noqa: F401 (the app fixture)

from agents.testing import ModelServer, Reply
from hosting import OPERATIONS
from hosting.entity._operations import OPERATION_HANDLERS


def _raw(output: dict[str, object], index: int = 0) -> str:
    """The JSON text of one operation's result in a batch response."""
    results = output["results"]
    assert isinstance(results, list)
    text = results[index]["result"]
    assert isinstance(text, str)
    return text


def test_every_operation_has_its_handler_in_the_documented_order() -> None:
    assert tuple(OPERATION_HANDLERS) == OPERATIONS


def test_a_turn_of_steps_answers_running_pending_steered_and_its_status(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    model.script(Reply.tool_call("charge", {"amount": 1}, call_id="c"))
    first = _batch(steps_app, None, [("run", run_op("one", "w1")), ("run", run_op("two", "w2"))])
    assert _raw(first, 0) == '{"correlationId": "w1", "status": "running", "step": 1}'
    assert _raw(first, 1) == '{"correlationId": "w2", "status": "pending"}'
    assert _signalled(first) == [("step", {"correlationId": "w1", "step": 1})]
    state = first["entityState"]
    steer = run_op("three", "w3", multitaskStrategy="steer")
    reads = [
        ("run", steer),
        ("run_status", {"correlationId": "w1"}),
        ("run_status", {"correlationId": "w2"}),
        ("run_status", {"correlationId": "nobody"}),
        ("decide", {"correlationId": "w1", "callId": "c", "approved": True}),
        ("expire_approvals", {"correlationId": "w1", "step": 1, "seconds": 5}),
    ]
    out = _batch(steps_app, state, reads)
    assert [_raw(out, i) for i in range(len(reads))] == [
        '{"correlationId": "w3", "status": "steered", "steeredInto": "w1"}',
        '{"correlationId": "w1", "step": 1, "status": "running"}',
        '{"correlationId": "w2", "status": "pending"}',
        "null",
        '{"correlationId": "w1", "callId": "c", "outcome": "not_awaiting"}',
        "null",
    ]


def test_a_paused_turn_answers_its_calls_status_and_decisions_in_their_order(
    approvals_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    tools = _paused(approvals_app, model, 500, 700)
    assert _raw(tools).startswith('{"correlationId": "pay-1", "status": "awaiting_approval", "approvals": [{')
    assert list(json.loads(_raw(tools))) == ["correlationId", "status", "approvals"]
    decide = {"correlationId": "pay-1", "callId": "call-500", "approved": True}
    ops = [
        ("run_status", {"correlationId": "pay-1"}),
        ("expire", None),
        ("decide", decide),
        ("expire_approvals", {"correlationId": "pay-1", "step": 1, "seconds": 5}),
    ]
    out = _batch(approvals_app, tools["entityState"], ops)
    status, expiry = json.loads(_raw(out, 0)), json.loads(_raw(out, 1))
    assert list(status) == ["correlationId", "step", "status", "approvals", "dueAt", "seconds"]
    assert status["status"] == "awaiting_approval" and status["step"] == 1
    assert list(expiry) == ["expired", "dueAt", "approvals"]
    assert list(expiry["approvals"]) == ["correlationId", "step", "seconds", "dueAt"]
    assert _raw(out, 2) == (
        '{"correlationId": "pay-1", "callId": "call-500", "outcome": "decided", "resumed": false}'
    )
    assert _raw(out, 3) == '{"correlationId": "pay-1", "expired": ["call-700"]}'


def test_the_lifecycle_operations_answer_their_documented_shapes(
    steps_app: df.DFApp, model: ModelServer  # noqa: F811
) -> None:
    ops = [("archive_epoch", None), ("expire", None), ("get", None)]
    empty = _batch(steps_app, None, ops)
    assert [_raw(empty, i) for i in range(len(ops))] == [
        '{"readable": true, "epoch": null}', '{"expired": false, "dueAt": null}', "null",
    ]
    assert empty["entityExists"] is False
    model.script(Reply.text("hi"))
    ran = _batch(steps_app, None, [("run", run_op("hi", "l1"))])
    result = json.loads(_raw(ran))
    assert list(result) == ["correlationId", "status", "text", "messages", "usage", "structured", "error"]
    later = _batch(steps_app, ran["entityState"], [("expire", None), ("reset", None), ("delete", None)])
    assert json.loads(_raw(later, 0))["expired"] is False and list(json.loads(_raw(later, 0))) == [
        "expired", "dueAt",
    ]
    assert _raw(later, 1) == '{"epoch": null}' and _raw(later, 2) == '{"epoch": null}'


def test_an_unknown_operation_names_the_known_ones(steps_app: df.DFApp) -> None:  # noqa: F811
    out = _batch(steps_app, None, [("explode", None)])
    [result] = out["results"]
    assert result["isError"] is True
    message = json.loads(result["result"])
    assert message == f"entity dafx-payer has no operation 'explode'; known: {', '.join(OPERATIONS)}"


@pytest.mark.parametrize(
    ("operation", "value", "message"),
    [
        ("step", None, "invalid input for dafx-payer step: expected an object"),
        ("cancel", {}, "invalid input for dafx-payer cancel: expected {'correlationId': str}"),
        ("run_status", [], "invalid input for dafx-payer run_status: expected {'correlationId': str}"),
        (
            "decide",
            {"correlationId": "x", "callId": "c", "approved": "yes"},
            "invalid input for dafx-payer decide: expected "
            "{'correlationId': str, 'callId': str, 'approved': bool, 'reason'?: str}",
        ),
        ("expire_approvals", {"step": 1}, "invalid input for dafx-payer expire_approvals"),
        ("announce_approvals", {"correlationId": "x", "step": 1, "seq": True},
         "invalid input for dafx-payer announce_approvals"),
    ],
)
def test_an_input_of_the_wrong_shape_fails_its_operation_naming_what_it_takes(
    steps_app: df.DFApp, operation: str, value: object, message: str  # noqa: F811
) -> None:
    out = _batch(steps_app, None, [(operation, value)])
    [result] = out["results"]
    assert result["isError"] is True and json.loads(result["result"]) == message
    assert out["entityExists"] is False
