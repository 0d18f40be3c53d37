"""Turning an incoming HTTP request into a validated run (or a 4xx problem naming the field).

Nothing here touches storage: every check a request can fail happens before anything is sent
to an entity.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import azure.functions as func
import orjson
from pydantic import ValidationError

from agents import InputMessage, InvalidTurnRequest, TurnRequest, current_trace_context

from .._errors import ProblemCode, ProblemError
from .._ids import (
    MULTITASK_STRATEGIES,
    correlation_id_for_key,
    id_problem,
    idempotency_key_problem,
    new_session_id,
    session_id_for_key,
)
from .._numbers import whole_number
from .._settings import MAX_BODY_BYTES
from ..streams import EVENT_STREAM
from ..webhooks import Webhook, WebhookRefused, check_webhook
from ._models import RunRequestBody
from ._problems import validation_problem
from ._users import caller_user

WAIT_HEADER = "x-ms-wait-for-response"
SESSION_HEADER = "x-ms-session-id"
CORRELATION_HEADER = "x-ms-correlation-id"
IDEMPOTENCY_HEADER = "Idempotency-Key"

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


@dataclass(frozen=True)
class RunCall:
    """A validated run request: where it goes, what it says, and how the caller wants to wait."""

    agent: str
    session_id: str
    new_session: bool
    fresh_session: bool  # its id was just drawn at random here: nothing can be stored under it yet
    correlation_id: str
    retry_safe: bool  # the caller named the run (Idempotency-Key / correlation_id): may be a retry
    wait: bool
    request: TurnRequest
    user_id: str | None = None  # whom the caller acts for (hosting.http._users)
    multitask_strategy: str = "enqueue"  # what to do when the session is busy
    webhook: Webhook | None = None  # where to POST the outcome when the run ends (hosting.webhooks)
    event_stream: bool = False  # the caller asked for `text/event-stream` (hosting.http._sse)
    after: int = 0  # the event the stream resumes after (`Last-Event-ID`, `?after=`)


def check_id(value: str, field: str, code: ProblemCode = ProblemCode.INVALID_SESSION_ID) -> str:
    """`value` if it is an acceptable id, else a 400 problem naming `field`."""
    problem = id_problem(value)
    if problem is not None:
        raise ProblemError(code, f"'{field}' {problem}", field=field)
    return value


MAX_EVENT_ID_DIGITS = 16
"""Longest accepted `Last-Event-ID` / `?after=` (event ids are whole numbers from 1)."""

PAGE_SIZE_DIGITS = 6
"""The most characters a page size may have (leading zeros count): enough for every listing's
largest, few enough that no caller makes `int` read a long text."""


def page_size_param(req: func.HttpRequest, name: str, *, default: int, maximum: int) -> int:
    """The query value `name` that sizes a page of a listing (sessions, history, memories): a
    whole number from 1 to `maximum`, `default` when absent, else a 400 naming it. Every listing
    reads it the same way."""
    raw = req.params.get(name)
    if raw is None:
        return default
    size = whole_number(raw, PAGE_SIZE_DIGITS)
    if size is None or not 1 <= size <= maximum:
        raise ProblemError(
            ProblemCode.INVALID_FIELD, f"'{name}' must be a whole number from 1 to {maximum}", field=name
        )
    return size


def read_body(req: func.HttpRequest, max_bytes: int = MAX_BODY_BYTES) -> bytes:
    """The raw body, or 413 when it is over the documented limit (a declared Content-Length over it
    is refused before the body is looked at; the host itself bounds what it reads, see
    docs/hosting.md "Body limits")."""
    declared = (req.headers.get("content-length") or "").strip()
    size = whole_number(declared, 19) or 0
    if size <= max_bytes:
        body = req.get_body() or b""
        size = len(body)
        if size <= max_bytes:
            return body
    raise ProblemError(
        ProblemCode.BODY_TOO_LARGE,
        f"the request body is {size} bytes; the limit is {max_bytes} bytes",
        field="body",
        limit=max_bytes,
    )


def _media_type(req: func.HttpRequest) -> str:
    return (req.headers.get("content-type") or "").split(";", 1)[0].strip().lower()


def parse_json_object(req: func.HttpRequest, max_bytes: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The body as a JSON object (415 for another media type, 400 for bad JSON or a non-object)."""
    body = read_body(req, max_bytes)
    media = _media_type(req)
    if media and media != "application/json" and not media.endswith("+json"):
        raise ProblemError(
            ProblemCode.UNSUPPORTED_MEDIA_TYPE,
            f"Content-Type {media!r} is not accepted here; send application/json",
            field="Content-Type",
        )
    return _decode_object(body)


def _decode_object(body: bytes) -> dict[str, Any]:
    if not body.strip():
        raise ProblemError(
            ProblemCode.INVALID_JSON, "the request body is empty; send a JSON object", field="body"
        )
    try:
        value = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ProblemError(
            ProblemCode.INVALID_ENCODING, f"the body is not UTF-8 (byte {error.start})", field="body"
        ) from error
    except json.JSONDecodeError as error:
        raise ProblemError(
            ProblemCode.INVALID_JSON,
            f"the body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
            field="body",
        ) from error
    except RecursionError as error:
        # The parser recurses per nesting level; Python's recursion limit ends it (about 1,000 levels
        # on 3.11; far more from 3.12 on, where _refuse_lone_surrogates catches it first).
        raise ProblemError(
            ProblemCode.INVALID_JSON, "the body's JSON is nested deeper than the parser allows", field="body"
        ) from error
    except ValueError as error:
        # Valid JSON that Python refuses to convert, e.g. an integer of more than 4,300 digits.
        raise ProblemError(
            ProblemCode.INVALID_JSON, f"the body's JSON cannot be read: {error}", field="body"
        ) from error
    if not isinstance(value, dict):
        raise ProblemError(ProblemCode.INVALID_TYPE, "the body must be a JSON object", field="body")
    _refuse_lone_surrogates(value)
    return value


# The shallowest nesting orjson refuses to encode, "Recursion limit reached" (each object and array
# is a level, the body's own object included): 255 levels in orjson 3.13, 256 in 3.10.
_ORJSON_MAX_DEPTH = 255


def _nesting_depth(value: Any) -> int:
    """How many objects and arrays deep `value` goes (iteratively: the value may be deeper than
    Python's recursion limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _refuse_lone_surrogates(body: dict[str, Any]) -> None:
    """A `\\ud800`-style escape decodes to text UTF-8 cannot carry: refused, naming the field.

    orjson refuses such strings, so one encode answers "is there any?" for the common body.
    """
    try:
        orjson.dumps(body)
        return
    except TypeError:
        pass
    # orjson also refuses nesting deeper than its recursion limit, a body the session state could
    # not hold either.
    if _nesting_depth(body) >= _ORJSON_MAX_DEPTH:
        raise ProblemError(
            ProblemCode.INVALID_JSON, "the body's JSON is nested deeper than the app stores", field="body"
        )
    for field, value in body.items():
        try:
            orjson.dumps({field: value})
        except TypeError:
            raise ProblemError(
                ProblemCode.INVALID_ENCODING,
                f"{field!r} holds a lone UTF-16 surrogate escape, which is not text",
                field=str(field),
            ) from None


def _run_body(req: func.HttpRequest, max_bytes: int) -> RunRequestBody:
    body = read_body(req, max_bytes)
    media = _media_type(req)
    if media == "text/plain":
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProblemError(
                ProblemCode.INVALID_ENCODING, f"the body is not UTF-8 (byte {error.start})", field="body"
            ) from error
        raw: dict[str, Any] = {"message": text}
    elif not media or media == "application/json" or media.endswith("+json"):
        raw = _decode_object(body)
    else:
        raise ProblemError(
            ProblemCode.UNSUPPORTED_MEDIA_TYPE,
            f"Content-Type {media!r} is not accepted; send application/json or text/plain",
            field="Content-Type",
        )
    try:
        return RunRequestBody.model_validate(raw)
    except ValidationError as error:
        raise validation_problem(error) from error


def _flag(value: str, field: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ProblemError(
        ProblemCode.INVALID_FIELD, f"'{field}' must be true or false (got {value!r})", field=field
    )


def _session_of(body: RunRequestBody, req: func.HttpRequest) -> str | None:
    """The session id from the body (`session_id` or its alias `thread_id`) or the query string."""
    candidates = [
        ("session_id", "body", body.session_id),
        ("thread_id", "body", body.thread_id),
        ("session_id", "query", req.params.get("session_id")),
        ("thread_id", "query", req.params.get("thread_id")),
    ]
    found: tuple[str, str, str] | None = None
    for field, where, value in candidates:
        if value is None:
            continue
        check_id(value, field)
        if found is not None and found[2] != value:
            # Say where each came from: body and query may use the same name.
            raise ProblemError(
                ProblemCode.CONFLICTING_FIELDS,
                f"the {found[1]}'s '{found[0]}' and the {where}'s '{field}' name different sessions; "
                "send one of them",
                field=field,
            )
        found = found or (field, where, value)
    return None if found is None else found[2]


def _strategy_of(body: RunRequestBody, req: func.HttpRequest) -> str:
    """The `multitask_strategy` from the body or the query string (the body's was validated by
    its model; the query's is checked here against the same values)."""
    query = req.params.get("multitask_strategy")
    if query is not None and query not in MULTITASK_STRATEGIES:
        allowed = ", ".join(repr(s) for s in MULTITASK_STRATEGIES)
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            f"'multitask_strategy' must be one of {allowed} (got {query!r})",
            field="multitask_strategy",
        )
    if query is not None and body.multitask_strategy is not None and query != body.multitask_strategy:
        raise ProblemError(
            ProblemCode.CONFLICTING_FIELDS,
            "the body's 'multitask_strategy' and the query's differ; send one of them",
            field="multitask_strategy",
        )
    return body.multitask_strategy or query or "enqueue"


def _turn_request(body: RunRequestBody, correlation_id: str) -> TurnRequest:
    """The entity's input, built (and so validated) here: what the agent would reject (a response
    format it cannot use, bad options) is a 400 now rather than a failed operation later."""
    try:
        return TurnRequest(
            correlation_id=correlation_id,
            messages=[InputMessage(role=body.role, text=body.message)],
            response_format=body.response_format,
            options=body.options.to_dict(),
            trace_context=current_trace_context(),  # the request's span: the turn joins its trace
        )
    except InvalidTurnRequest as error:
        field = {"message": "message", "messages": "message"}.get(error.field, error.field)
        code = ProblemCode.EMPTY_MESSAGE if field == "message" else ProblemCode.INVALID_FIELD
        raise ProblemError(code, f"'{field}': {error.message}", field=field) from error


def _webhook_of(body: RunRequestBody) -> Webhook | None:
    """The run's webhook, checked against the settings (a 400 naming why, before anything is stored)."""
    if body.webhook is None:
        return None
    webhook = Webhook(body.webhook.url, body.webhook.token, body.webhook.format)
    try:
        check_webhook(webhook)
    except WebhookRefused as error:
        raise ProblemError(ProblemCode.INVALID_FIELD, f"'webhook': {error}", field="webhook.url") from None
    return webhook


@dataclass(frozen=True)
class RunArgs:
    """What a caller asks of a run, as plain values: an HTTP request's (read by `parse_run`) or a
    protocol edge's own. `run_call` checks them as the run route checks its body."""

    message: str
    role: str = "user"
    session_id: str | None = None  # None: a new session
    correlation_id: str | None = None  # the run's id, chosen by the caller (a retry runs once)
    idempotency_key: str | None = None  # the same, derived into ids (`Idempotency-Key`)
    user_id: str | None = None  # whom the caller acts for, as `caller_user` found it
    wait: bool = True
    event_stream: bool = False
    after: int = 0
    response_format: dict[str, Any] | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    webhook: Webhook | None = None
    multitask_strategy: str | None = None  # None: `enqueue`


def _content(args: RunArgs) -> RunRequestBody:
    """The values the run body holds, checked by the body's own model: an edge's values get the
    very problems (codes, fields, `errors`) the route's body would."""
    raw: dict[str, Any] = {"message": args.message, "role": args.role, "options": dict(args.options)}
    optional = {
        "session_id": args.session_id,
        "correlation_id": args.correlation_id,
        "response_format": args.response_format,
        "multitask_strategy": args.multitask_strategy,
        "webhook": None if args.webhook is None else args.webhook.to_json(),
    }
    raw.update({name: value for name, value in optional.items() if value is not None})
    try:
        return RunRequestBody.model_validate(raw)
    except ValidationError as error:
        raise validation_problem(error) from error


def _check_key(key: str | None, correlation_id: str | None) -> None:
    if key is None:
        return
    problem = idempotency_key_problem(key)
    if problem is not None:
        raise ProblemError(
            ProblemCode.INVALID_IDEMPOTENCY_KEY, f"'{IDEMPOTENCY_HEADER}' {problem}", field=IDEMPOTENCY_HEADER
        )
    if correlation_id is not None:
        raise ProblemError(
            ProblemCode.CONFLICTING_FIELDS,
            f"send either '{IDEMPOTENCY_HEADER}' or 'correlation_id', not both",
            field="correlation_id",
        )


def _check_strategy(strategy: str, webhook: Webhook | None, event_stream: bool) -> None:
    if webhook is not None and strategy == "steer":
        # A steer joins the running run and ends with it: that run's own webhook tells its end.
        raise ProblemError(
            ProblemCode.CONFLICTING_FIELDS,
            "a run sent with multitask_strategy 'steer' takes no webhook (it joins the running run)",
            field="webhook",
        )
    if event_stream and strategy == "steer":
        # Its events would be the running run's, which it cannot know before the entity decides.
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            "multitask_strategy 'steer' is answered as JSON only: send it without "
            "'Accept: text/event-stream', then follow the running run its answer names",
            field="multitask_strategy",
        )


def run_call(agent: str, args: RunArgs) -> RunCall:
    """The run `args` ask of `agent`, checked completely before anything is sent anywhere: the
    one builder of a RunCall, for the run route and the protocol edges alike."""
    content = _content(args)
    webhook = _webhook_of(content)
    key = args.idempotency_key
    _check_key(key, content.correlation_id)
    session_id = content.session_id
    new_session = session_id is None
    if session_id is None:
        session_id = session_id_for_key(agent, key, args.user_id) if key is not None else new_session_id()
    if key is not None:
        correlation_id = correlation_id_for_key(agent, session_id, key)
    elif content.correlation_id is not None:
        correlation_id = content.correlation_id
    else:
        correlation_id = uuid.uuid4().hex
    request = _turn_request(content, correlation_id)
    strategy = content.multitask_strategy or "enqueue"
    _check_strategy(strategy, webhook, args.event_stream)
    return RunCall(
        agent=agent,
        session_id=session_id,
        new_session=new_session,
        fresh_session=new_session and key is None,
        correlation_id=correlation_id,
        retry_safe=key is not None or content.correlation_id is not None,
        wait=args.wait,
        request=request,
        user_id=args.user_id,
        multitask_strategy=strategy,
        webhook=webhook,
        event_stream=args.event_stream,
        after=args.after,
    )


def _wait_of(body: RunRequestBody, req: func.HttpRequest) -> bool:
    """The body's `wait_for_response`, else the header's, else the query's, else true."""
    header_wait = req.headers.get(WAIT_HEADER)
    if body.wait_for_response is not None:
        return body.wait_for_response
    if header_wait is not None:
        return _flag(header_wait, WAIT_HEADER)
    if req.params.get("wait_for_response") is not None:
        return _flag(req.params["wait_for_response"], "wait_for_response")
    return True


def parse_run(req: func.HttpRequest, agent: str, *, max_bytes: int = MAX_BODY_BYTES) -> RunCall:
    """Validate a `POST .../run` request completely, before anything is sent anywhere: its HTTP
    parts (body, headers, query) read into plain values, then `run_call`."""
    body = _run_body(req, max_bytes)
    webhook = _webhook_of(body)
    user_id = caller_user(req, body.user_id)
    session_id = _session_of(body, req)
    wait = _wait_of(body, req)
    key = req.headers.get(IDEMPOTENCY_HEADER)
    _check_key(key, body.correlation_id)
    strategy = _strategy_of(body, req)
    event_stream = wants_event_stream(req)
    args = RunArgs(
        message=body.message,
        role=body.role,
        session_id=session_id,
        correlation_id=body.correlation_id,
        idempotency_key=key,
        user_id=user_id,
        wait=wait,
        event_stream=event_stream,
        response_format=body.response_format,
        options=body.options.to_dict(),
        webhook=webhook,
        multitask_strategy=strategy,
    )
    call = run_call(agent, args)
    return replace(call, after=resume_after(req)) if event_stream else call


def wants_event_stream(req: func.HttpRequest) -> bool:
    """Whether the caller asked for `text/event-stream` (its Accept header names it)."""
    accept = req.headers.get("accept") or ""
    return any(part.split(";", 1)[0].strip().lower() == EVENT_STREAM for part in accept.split(","))


def resume_after(req: func.HttpRequest) -> int:
    """The sequence number to resume after: the `Last-Event-ID` header (what an EventSource sends on
    reconnect), else `?after=`, else 0 (from the start). 400 `invalid_field` for anything else."""
    header = req.headers.get("last-event-id")
    name, raw = ("Last-Event-ID", header) if header is not None else ("after", req.params.get("after"))
    if raw is None or (raw.strip() == "" and name == "Last-Event-ID"):
        return 0
    after = whole_number(raw.strip(), MAX_EVENT_ID_DIGITS)
    if after is None:
        raise ProblemError(
            ProblemCode.INVALID_FIELD,
            f"'{name}' must be the id of an event of this run (a whole number from 0)",
            field=name,
        )
    return after
