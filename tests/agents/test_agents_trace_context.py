"""The W3C trace context a turn request carries across the durable hop: kept, cleaned, never a
reason to refuse a turn, and no part of what the request asks (its hash)."""

from __future__ import annotations

import pytest

from agents import Agent, InputMessage, InvalidTurnRequest, TurnRequest, context_from, current_trace_context

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _request(**extra: object) -> TurnRequest:
    return TurnRequest(correlation_id="c1", messages=[InputMessage("user", "hi")], **extra)  # type: ignore[arg-type]


def test_round_trips_in_the_operation_json() -> None:
    request = _request(trace_context={"traceparent": PARENT, "tracestate": "k=v"})
    data = request.to_json()
    assert data["traceContext"] == {"traceparent": PARENT, "tracestate": "k=v"}
    assert TurnRequest.from_json(data).trace_context == {"traceparent": PARENT, "tracestate": "k=v"}
    assert "traceContext" not in _request().to_json()


@pytest.mark.parametrize(
    "carried",
    [None, "00-abc", 7, [], {"tracestate": "k=v"}, {"traceparent": 5}, {"traceparent": "x" * 600}],
)
def test_a_malformed_trace_context_is_dropped_not_refused(carried: object) -> None:
    data = {"correlationId": "c1", "messages": [{"role": "user", "text": "hi"}], "traceContext": carried}
    assert TurnRequest.from_json(data).trace_context is None


def test_only_the_w3c_fields_are_kept() -> None:
    request = _request(trace_context={"traceparent": PARENT, "baggage": "secret=1", "other": "x"})
    assert request.trace_context == {"traceparent": PARENT}
    with pytest.raises(InvalidTurnRequest):
        _request(trace_context="00-abc")


def test_the_trace_context_is_not_part_of_the_request_hash() -> None:
    agent = Agent(name="a", instructions="x")
    plain = agent.request_identity(_request())
    assert agent.request_identity(_request(trace_context={"traceparent": PARENT})) == plain


def test_current_trace_context_names_the_current_span() -> None:
    from opentelemetry import context

    assert current_trace_context() is None  # no span: nothing to carry
    parent = context_from({"traceparent": PARENT})
    assert parent is not None and context_from({"traceparent": "bad"}) is None
    token = context.attach(parent)
    try:
        assert current_trace_context() == {"traceparent": PARENT}
    finally:
        context.detach(token)
