"""The trace context the local host puts on an invocation's `context.trace_context`."""

from __future__ import annotations

import re

from devhost.functions._trace_context import invocation_trace_context

CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_valid_caller_trace_context_is_passed_through() -> None:
    found = invocation_trace_context(CALLER, "congo=t61rcWkgMzE")
    assert (found.trace_parent, found.trace_state) == (CALLER, "congo=t61rcWkgMzE")
    # The worker's own spelling too, for code written against it.
    assert (found.Traceparent, found.Tracestate, found.Attributes) == (CALLER, "congo=t61rcWkgMzE", {})
    assert found.trace_id == "0af7651916cd43dd8448eb211c80319c"


def test_without_a_valid_one_a_new_trace_starts() -> None:
    zeros = "00-00000000000000000000000000000000-b7ad6b7169203331-01"
    for given in (None, "", "garbage", zeros, CALLER.replace("-01", "-1"), "ff" + CALLER[2:]):
        found = invocation_trace_context(given, "dropped=1")
        assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", found.trace_parent), given
        assert found.trace_parent != given and found.trace_state == ""
    assert invocation_trace_context(None, None).trace_id != invocation_trace_context(None, None).trace_id


def test_an_oversized_tracestate_is_dropped() -> None:
    assert invocation_trace_context(CALLER, "k=" + "v" * 600).trace_state == ""
