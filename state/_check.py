"""A fast yes/no check of a parsed document against the wire schema in `_wire`.

Validating a large history with pydantic costs more than parsing it; this walk (its entry and
content field tables generated from `_wire`'s TypedDicts) accepts exactly what `_wire.ROOT`
(strict) accepts, and only when it says no does the loader run
pydantic to find and describe the first problem. The property tests hold the two in agreement.
Input comes from a JSON parser, so `type(x) is T` is exact (bool is not an int here).
"""

from __future__ import annotations

import re
from typing import Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints

from . import _wire
from ._wire import CHUNK_NAME_PATTERN, EPOCH_PATTERN

_CHUNK_NAME = re.compile(CHUNK_NAME_PATTERN)
_EPOCH = re.compile(EPOCH_PATTERN)

# Field kinds.
_OPT_STR = 0  # absent, null or a string
_REQ_STR = 1  # a string, must be present
_OPT_DICT = 2  # absent, null or an object
_ANY = 3  # any JSON value (present or not)
_REQ_ANY = 4  # any JSON value, must be present
_MESSAGES = 5
_OPT_USAGE = 6  # absent, null or a usage object
_REQ_USAGE = 7
_OPT_FAILURE = 8

_Spec = dict[str, int]

# The tables below are generated from the TypedDicts in `_wire` (the spec `load_state` validates
# with), so a field added there is checked here too; the property tests hold the two equal.
_KINDS: dict[Any, int] = {
    str: _REQ_STR,
    str | None: _OPT_STR,
    dict[str, Any] | None: _OPT_DICT,
    list[_wire._Message]: _MESSAGES,
    _wire._Usage: _REQ_USAGE,
    _wire._Usage | None: _OPT_USAGE,
    _wire._Failure | None: _OPT_FAILURE,
}


def _kind(annotation: Any, required: bool) -> int:
    if get_origin(annotation) is NotRequired:
        (annotation,) = get_args(annotation)
    if annotation is Any:
        return _REQ_ANY if required else _ANY
    kind = _KINDS.get(annotation)
    if kind is None:
        raise TypeError(f"no fast check for the wire type {annotation!r}")
    return kind


def _spec(typed_dict: Any) -> tuple[_Spec, tuple[str, ...]]:
    """A TypedDict's field kinds and required fields (its `$type` literal left out)."""
    hints = get_type_hints(typed_dict, include_extras=True)
    required = typed_dict.__required_keys__
    spec = {
        name: _kind(hint, name in required) for name, hint in hints.items() if get_origin(hint) is not Literal
    }
    return spec, tuple(name for name in spec if name in required)


def _content_specs() -> dict[str, tuple[_Spec, tuple[str, ...]]]:
    members = get_args(_wire._Content)[0]
    if get_origin(members) is not Union:
        raise TypeError("_wire._Content is expected to be an annotated union of content TypedDicts")
    out: dict[str, tuple[_Spec, tuple[str, ...]]] = {}
    for member in get_args(members):
        typed_dict = get_args(member)[0]
        tag = get_type_hints(typed_dict, include_extras=True)["$type"]
        if get_origin(tag) is Literal:  # not the opaque fallback, whose $type is any string
            out[get_args(tag)[0]] = _spec(typed_dict)
    return out


_CONTENT = _content_specs()
_REQUEST, _ = _spec(_wire._Request)
_RESPONSE, _ = _spec(_wire._Response)
_USAGE_KEYS = ("inputTokenCount", "outputTokenCount", "totalTokenCount")
_RUN_STATUS = ("succeeded", "failed")


def document_ok(doc: Any) -> bool:
    """True when `doc` is a valid state document (any version label that is a string)."""
    if type(doc) is not dict or type(doc.get("schemaVersion")) is not str:
        return False
    data = doc.get("data")
    if type(data) is not dict:
        return False
    history = data.get("conversationHistory", [])
    if type(history) is not list:
        return False
    for entry in history:
        if not _entry_ok(entry):
            return False
    if "stateBag" in data and type(data["stateBag"]) is not dict:
        return False
    thread = data.get("serviceThreadId")
    if thread is not None and type(thread) is not str:
        return False
    if "runs" in data:
        runs = data["runs"]
        if type(runs) is not dict:
            return False
        for run in runs.values():
            if not _run_ok(run):
                return False
    if "lastActivityAt" in data and type(data["lastActivityAt"]) is not str:
        return False
    if "userId" in data and type(data["userId"]) is not str:
        return False
    return "archive" not in data or _archive_ok(data["archive"])


def _archive_ok(archive: Any) -> bool:
    # (1.3.0) data.archive: the epoch, how many entries were archived and the chunk references.
    if type(archive) is not dict:
        return False
    epoch = archive.get("epoch")
    if type(epoch) is not str or _EPOCH.fullmatch(epoch) is None:
        return False
    counts = (archive.get("archivedEntries"), archive.get("archivedMessages", 0))
    if not all(_count_ok(count, 0) for count in counts):
        return False
    chunks = archive.get("chunks")
    if type(chunks) is not list:
        return False
    for ref in chunks:
        if not _chunk_ref_ok(ref):
            return False
    if "runs" in archive:
        runs = archive["runs"]
        if type(runs) is not dict or not all(_run_ok(run) for run in runs.values()):
            return False
    return True


def _count_ok(value: Any, minimum: int) -> bool:
    return type(value) is int and value >= minimum


def _chunk_ref_ok(ref: Any) -> bool:
    if type(ref) is not dict:
        return False
    name = ref.get("name")
    if type(name) is not str or _CHUNK_NAME.fullmatch(name) is None:
        return False
    if not _count_ok(ref.get("first"), 0) or not _count_ok(ref.get("count"), 1):
        return False
    return "bytes" not in ref or type(ref["bytes"]) is int


def _entry_ok(entry: Any) -> bool:
    if type(entry) is not dict:
        return False
    kind = entry.get("$type")
    if kind == "request":
        spec = _REQUEST
    elif kind == "response":
        spec = _RESPONSE
    else:
        return False
    for key, value in entry.items():
        field = spec.get(key)
        if field is None:
            continue
        if field == _OPT_STR:
            if value is not None and type(value) is not str:
                return False
        elif field == _MESSAGES:
            if type(value) is not list:
                return False
            for message in value:
                if not _message_ok(message):
                    return False
        elif field == _OPT_USAGE:
            if value is not None and not _usage_ok(value):
                return False
        elif field == _OPT_FAILURE:
            if value is not None and not _failure_ok(value):
                return False
        elif field == _OPT_DICT and value is not None and type(value) is not dict:
            return False
    return True


def _message_ok(message: Any) -> bool:
    if type(message) is not dict or type(message.get("role")) is not str:
        return False
    contents = message.get("contents")
    if contents is not None or "contents" in message:
        if type(contents) is not list:
            return False
        for content in contents:
            if not _content_ok(content):
                return False
    for key in ("authorName", "createdAt"):
        value = message.get(key)
        if value is not None and type(value) is not str:
            return False
    return True


def _content_ok(content: Any) -> bool:
    if type(content) is not dict:
        return False
    kind = content.get("$type")
    if kind == "text":
        # Most stored content (its only known field is the required string `text`).
        return type(content.get("text")) is str
    if type(kind) is not str:
        return False
    known = _CONTENT.get(kind)
    if known is None:
        return True  # opaque: kept verbatim
    spec, required = known
    for key in required:
        if key not in content:
            return False
    for key, field in spec.items():
        if key not in content:
            continue
        value = content[key]
        if field == _REQ_STR:
            if type(value) is not str:
                return False
        elif field == _OPT_STR:
            if value is not None and type(value) is not str:
                return False
        elif field == _OPT_DICT:
            if value is not None and type(value) is not dict:
                return False
        elif field == _REQ_USAGE and not _usage_ok(value):
            return False
    return True


def _usage_ok(usage: Any) -> bool:
    if type(usage) is not dict:
        return False
    for key in _USAGE_KEYS:
        value = usage.get(key)
        if value is not None and type(value) is not int:
            return False
    return True


def _failure_ok(failure: Any) -> bool:
    if type(failure) is not dict:
        return False
    if type(failure.get("code")) is not str or type(failure.get("message")) is not str:
        return False
    if "retryable" in failure and type(failure["retryable"]) is not bool:
        return False
    status = failure.get("status")
    return status is None or type(status) is int


def _run_ok(run: Any) -> bool:
    if type(run) is not dict or run.get("status") not in _RUN_STATUS:
        return False
    if type(run.get("responseIndex")) is not int:
        return False
    request_index = run.get("requestIndex")
    if request_index is not None and type(request_index) is not int:
        return False
    request_hash = run.get("requestHash")
    return request_hash is None or type(request_hash) is str
