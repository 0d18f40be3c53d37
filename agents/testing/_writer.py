"""Writing a model call's answer: an error as the service sends it, a JSON answer, or a stream of
server-sent events paced like a real model's tokens and broken off where `Reply.interrupted`
says."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, NoReturn

from aiohttp import web

from ._chat import chat_chunks, chat_completion
from ._replies import ErrorSpec, ModelRequest, Reply, ToolCall
from ._responses import response_events
from ._wire import compute_usage, new_id, sse, truncate_words

STREAM_ERROR = {
    "message": "The server had an error while processing your request.",
    "type": "server_error",
    "code": "server_error",
}
"""What an interrupted stream sends (`Reply.interrupted`), as the service reports a failure it
hits after the answer began."""


def error_response(spec: ErrorSpec) -> web.Response:
    """An error answer as the service sends it (its request id, its retry-after headers)."""
    headers = {"x-request-id": new_id("req_"), **spec.headers}
    if spec.retry_after is not None:
        seconds = spec.retry_after
        headers["retry-after"] = str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"
        headers["retry-after-ms"] = str(int(seconds * 1000))
    return web.json_response(spec.body(), status=spec.status, headers=headers)


def json_answer(body: dict[str, Any]) -> web.Response:
    return web.json_response(body, headers={"x-request-id": new_id("req_")})


def finish(request: ModelRequest, reply: Reply) -> Reply:
    """Assign call ids and apply the request's output-token limit."""
    calls = tuple(c if c.call_id else ToolCall(c.name, c.arguments, new_id("call_")) for c in reply.calls)
    reply = replace(reply, calls=calls)
    limit = request.max_output_tokens
    if limit is not None and reply.content is not None:
        cut = truncate_words(reply.content, limit)
        if cut != reply.content:
            reply = replace(reply, content=cut, finish_reason="length")
    return reply


async def send_chat(
    http: web.Request, request: ModelRequest, reply: Reply, delay: float
) -> web.StreamResponse:
    """A Chat Completions answer: JSON, or chunks ending `[DONE]`, `delay` seconds apart."""
    usage = compute_usage(reply, request)
    if not request.stream:
        return json_answer(chat_completion(reply, request, usage))
    stream = await _open_stream(http)
    for index, chunk in enumerate(chat_chunks(reply, request, usage)):
        if index == reply.interrupt_after:
            return await _interrupt(http, stream, reply, {"error": STREAM_ERROR})
        await _pace(index, delay)
        await stream.write(sse(chunk))
    await stream.write(sse("[DONE]"))
    await stream.write_eof()
    return stream


async def send_response_events(
    http: web.Request,
    request: ModelRequest,
    reply: Reply,
    response_id: str,
    final: dict[str, Any],
    delay: float,
) -> web.StreamResponse:
    """A streamed Responses API answer: its events, `delay` seconds apart."""
    stream = await _open_stream(http)
    for index, event in enumerate(response_events(request, response_id, reply, final)):
        if index == reply.interrupt_after:
            error = {
                "type": "error",
                "code": STREAM_ERROR["code"],
                "message": STREAM_ERROR["message"],
                "param": None,
                "sequence_number": index,
            }
            return await _interrupt(http, stream, reply, error, event="error")
        await _pace(index, delay)
        await stream.write(sse(event, event=event["type"]))
    await stream.write_eof()
    return stream


def abort(http: web.Request) -> NoReturn:
    """Drop the connection without an answer, as a failing network or proxy does."""
    if http.transport is not None:
        http.transport.abort()
    raise asyncio.CancelledError()


async def _interrupt(
    http: web.Request,
    stream: web.StreamResponse,
    reply: Reply,
    error: dict[str, Any],
    event: str | None = None,
) -> web.StreamResponse:
    """Break a streamed answer off as `reply.interruption` says (see `Reply.interrupted`)."""
    if reply.interruption == "disconnect":
        abort(http)
    await stream.write(sse(error, event=event))
    await stream.write_eof()
    return stream


async def _pace(index: int, delay: float) -> None:
    # The first chunk goes out at once (time to first token is scripted with Reply.delay).
    if index and delay:
        await asyncio.sleep(delay)


async def _open_stream(http: web.Request) -> web.StreamResponse:
    stream = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "x-request-id": new_id("req_"),
        }
    )
    await stream.prepare(http)
    return stream
