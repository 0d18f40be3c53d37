"""A run's stream read by Chromium's own EventSource: a finished run is delivered once, then the
source closes (the 204 a reader gets when it already has the terminal event) instead of
reconnecting and being sent the answer again, and soon: the stream's `retry:` sets the wait."""

from __future__ import annotations

import json
import urllib.request
import uuid

from console_support import BrowserPage, api

from agents.testing import ModelServer, Reply

# Resolves when the source has closed (readyState 2) or after `limit` ms, with what it saw and
# how long the close took after the terminal event. An EventSource that is sent its answer again
# reconnects every few seconds and never closes.
READ = """async ([url, limit]) => {
  const seen = [];
  let ended = null;
  const source = new EventSource(url);
  for (const kind of ["run.started", "text.delta", "run.completed", "run.failed"]) {
    source.addEventListener(kind, (e) => {
      seen.push([kind, e.lastEventId]);
      if (kind === "run.completed" || kind === "run.failed") ended = performance.now();
    });
  }
  const closed = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), limit);
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) { clearTimeout(timer); resolve(true); }
    };
  });
  const closeMs = closed && ended !== null ? performance.now() - ended : null;
  source.close();
  return {closed, seen, closeMs};
}"""
CLOSE_WITHIN_MS = 2000
"""The stream's `retry:` (500 ms) and the 204, with room for a loaded machine; without a `retry:`,
Chromium waits its default 3 s before the reconnect that the 204 answers."""


def _streamed_turn(base_url: str, session: str) -> str:
    """A turn run with `Accept: text/event-stream`, read to its end; its correlation id."""
    request = urllib.request.Request(
        f"{base_url}/api/agents/assistant/run",
        data=json.dumps({"message": "hi", "session_id": session}).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
        return str(response.headers["x-ms-correlation-id"])


def test_event_source_reads_a_finished_run_once_then_closes(page: BrowserPage, model: ModelServer) -> None:
    model.handler = lambda request: Reply.text("one two three")
    view = page.open()
    streamed = f"es-{uuid.uuid4().hex[:8]}"
    correlation = _streamed_turn(page.base_url, streamed)
    # A JSON turn, its events read afterwards.
    plain = f"es-{uuid.uuid4().hex[:8]}"
    answer = api(page.base_url, "POST", "/api/agents/assistant/run", {"message": "hi", "session_id": plain})
    for session, run in ((streamed, correlation), (plain, answer["correlation_id"])):
        url = f"/api/agents/assistant/sessions/{session}/runs/{run}/stream"
        result = view.evaluate(READ, [url, 8000])
        kinds = [kind for kind, _ in result["seen"]]
        assert kinds.count("run.completed") == 1, result
        assert kinds[-1] == "run.completed", result
        assert result["closed"], f"the EventSource kept reconnecting: {result}"
        assert kinds[0] == "run.started", result
        assert result["closeMs"] < CLOSE_WITHIN_MS, f"the close came late: {result}"
