"""The wire schema as TypedDicts (the spec for validation and its error messages), JSON I/O.

A loaded document is kept as plain parsed JSON, unknown properties included, and that is what
gets written back: a load is lossless and cheap, and models are built only on demand.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, NotRequired

import orjson
from pydantic import ConfigDict, Discriminator, Field, StringConstraints, Tag, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails, from_json
from typing_extensions import TypedDict

from ._errors import InvalidState
from ._models import KNOWN_CONTENT_TYPES
from ._versions import json_kind

_OPEN = ConfigDict(extra="allow")


# The functional TypedDict syntax is needed because of the "$type" key.
class _Usage(TypedDict):
    inputTokenCount: NotRequired[int | None]
    outputTokenCount: NotRequired[int | None]
    totalTokenCount: NotRequired[int | None]


_Text = TypedDict("_Text", {"$type": Literal["text"], "text": str})
_Reasoning = TypedDict("_Reasoning", {"$type": Literal["reasoning"], "text": NotRequired[str | None]})
_Data = TypedDict("_Data", {"$type": Literal["data"], "uri": str, "mediaType": NotRequired[str | None]})
_Uri = TypedDict("_Uri", {"$type": Literal["uri"], "uri": str, "mediaType": str})
_Error = TypedDict(
    "_Error",
    {
        "$type": Literal["error"],
        "message": NotRequired[str | None],
        "errorCode": NotRequired[str | None],
        "details": NotRequired[Any],
    },
)
_FunctionCall = TypedDict(
    "_FunctionCall",
    {
        "$type": Literal["functionCall"],
        "callId": str,
        "name": str,
        "arguments": NotRequired[dict[str, Any] | None],
    },
)
_FunctionResult = TypedDict(
    "_FunctionResult", {"$type": Literal["functionResult"], "callId": str, "result": NotRequired[Any]}
)
_HostedFile = TypedDict("_HostedFile", {"$type": Literal["hostedFile"], "fileId": str})
_HostedVectorStore = TypedDict(
    "_HostedVectorStore", {"$type": Literal["hostedVectorStore"], "vectorStoreId": str}
)
_UsageContent = TypedDict("_UsageContent", {"$type": Literal["usage"], "usage": _Usage})
_Unknown = TypedDict("_Unknown", {"$type": Literal["unknown"], "content": Any})
_Opaque = TypedDict("_Opaque", {"$type": str})

OPAQUE_TAG = "__opaque__"


def _content_tag(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    tag = value.get("$type")
    if not isinstance(tag, str):
        return None
    return tag if tag in KNOWN_CONTENT_TYPES else OPAQUE_TAG


_Content = Annotated[
    Annotated[_Text, Tag("text")]
    | Annotated[_Reasoning, Tag("reasoning")]
    | Annotated[_Data, Tag("data")]
    | Annotated[_Uri, Tag("uri")]
    | Annotated[_Error, Tag("error")]
    | Annotated[_FunctionCall, Tag("functionCall")]
    | Annotated[_FunctionResult, Tag("functionResult")]
    | Annotated[_HostedFile, Tag("hostedFile")]
    | Annotated[_HostedVectorStore, Tag("hostedVectorStore")]
    | Annotated[_UsageContent, Tag("usage")]
    | Annotated[_Unknown, Tag("unknown")]
    | Annotated[_Opaque, Tag(OPAQUE_TAG)],
    Discriminator(
        _content_tag,
        custom_error_type="content_type",
        custom_error_message="content needs a string '$type'",
    ),
]


class _Message(TypedDict):
    role: str
    contents: NotRequired[list[_Content]]
    authorName: NotRequired[str | None]
    createdAt: NotRequired[str | None]


class _Failure(TypedDict):
    code: str
    message: str
    retryable: NotRequired[bool]
    status: NotRequired[int | None]


_Request = TypedDict(
    "_Request",
    {
        "$type": Literal["request"],
        "correlationId": NotRequired[str | None],
        "createdAt": NotRequired[str | None],
        "messages": NotRequired[list[_Message]],
        "responseType": NotRequired[str | None],
        "responseSchema": NotRequired[dict[str, Any] | None],
        "orchestrationId": NotRequired[str | None],
    },
)
_Response = TypedDict(
    "_Response",
    {
        "$type": Literal["response"],
        "correlationId": NotRequired[str | None],
        "createdAt": NotRequired[str | None],
        "messages": NotRequired[list[_Message]],
        "usage": NotRequired[_Usage | None],
        "failure": NotRequired[_Failure | None],
    },
)
_Entry = Annotated[_Request | _Response, Discriminator("$type")]


class _Run(TypedDict):
    status: Literal["succeeded", "failed"]
    requestIndex: NotRequired[int | None]
    responseIndex: int
    requestHash: NotRequired[str | None]


CHUNK_NAME_PATTERN = r"^[0-9]{8}-[0-9a-f]{64}$"
"""(1.3.0) An archived chunk's name: its sequence number and the sha256 of its bytes."""
EPOCH_PATTERN = r"^[0-9a-f]{16}$"
"""(1.3.0) An archive epoch: a new one for each archive a session starts (after a reset)."""


class _ChunkRef(TypedDict):
    name: Annotated[str, StringConstraints(pattern=CHUNK_NAME_PATTERN)]
    first: Annotated[int, Field(ge=0)]
    count: Annotated[int, Field(ge=1)]
    bytes: NotRequired[int]


class _Archive(TypedDict):
    epoch: Annotated[str, StringConstraints(pattern=EPOCH_PATTERN)]
    archivedEntries: Annotated[int, Field(ge=0)]
    archivedMessages: NotRequired[Annotated[int, Field(ge=0)]]
    chunks: list[_ChunkRef]
    runs: NotRequired[dict[str, _Run]]


class _StateData(TypedDict):
    conversationHistory: NotRequired[list[_Entry]]
    stateBag: NotRequired[dict[str, Any]]
    runs: NotRequired[dict[str, _Run]]
    serviceThreadId: NotRequired[str | None]
    archive: NotRequired[_Archive]
    lastActivityAt: NotRequired[str]
    userId: NotRequired[str]


class _Root(TypedDict):
    schemaVersion: str
    data: _StateData


for _td in (
    _Usage, _Text, _Reasoning, _Data, _Uri, _Error, _FunctionCall, _FunctionResult, _HostedFile,
    _HostedVectorStore, _UsageContent, _Unknown, _Opaque, _Message, _Failure, _Request, _Response,
    _Run, _ChunkRef, _Archive, _StateData, _Root,
):  # fmt: skip
    setattr(_td, "__pydantic_config__", _OPEN)  # noqa: B010 - TypedDicts take config this way

ROOT = TypeAdapter(_Root)
ENTRY = TypeAdapter(_Entry)

Doc = dict[str, Any]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is out of range")
    return value


def parse_json(raw: str | bytes) -> Any:
    """Parse JSON text with the standard library, raising InvalidState with the position."""
    try:
        return json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InvalidState(
            f"the state is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidState(f"the state is not valid JSON: {exc}") from None


def validate_doc(doc: Doc) -> Doc:
    """Validate an already parsed document, raising InvalidState that names the first problem."""
    try:
        out: Doc = ROOT.validate_python(doc, strict=True)  # type: ignore[assignment]
    except ValidationError as exc:
        raise invalid_from(exc, doc) from None
    return out


def invalid_from(exc: ValidationError, doc: Any, prefix: str = "") -> InvalidState:
    """Turn pydantic's first error into an InvalidState naming the JSON path and what was found."""
    err = exc.errors(include_url=False)[0]
    path, found, missing_key = _walk(doc, err, prefix)
    if err["type"] in _TAG_ERRORS and isinstance(found, dict):
        path += ".$type"
    return InvalidState(_describe_error(err, found, missing_key), path=path)


_TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found", "content_type")


def _walk(doc: Any, err: ErrorDetails, prefix: str) -> tuple[str, Any, str | None]:
    path = prefix
    value = doc
    skipped_tag = False
    for item in err["loc"]:
        if isinstance(value, list) and isinstance(item, int) and 0 <= item < len(value):
            path += f"[{item}]"
            value = value[item]
            skipped_tag = False
        elif (
            isinstance(value, dict)
            and not skipped_tag
            and (item == OPAQUE_TAG or (item == value.get("$type") and item in _TAGS))
        ):
            # A discriminated union's tag appears in the location but not in the document.
            skipped_tag = True
        elif isinstance(value, dict) and item in value:
            path += f".{item}" if path else str(item)
            value = value[item]
            skipped_tag = False
        else:
            path += f".{item}" if path else str(item)
            return path, None, str(item)
    return path, value, None


_TAGS = {*KNOWN_CONTENT_TYPES, "request", "response"}


def _describe_error(err: ErrorDetails, found: Any, missing_key: str | None) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "union_tag_invalid":
        tag = found.get("$type") if isinstance(found, dict) else ctx.get("tag")
        if not isinstance(tag, str):
            return f"entry '$type' must be 'request' or 'response', found {_short(tag)}"
        return f"unknown entry type {tag!r} (expected 'request' or 'response')"
    if kind == "union_tag_not_found":
        return "entry has no '$type' (expected 'request' or 'response')"
    if kind == "content_type":
        if not isinstance(found, dict):
            return f"expected a content object with a string '$type', found {_short(found)}"
        return f"content needs a string '$type', found {_short(found.get('$type'))}"
    if kind == "missing" or missing_key is not None:
        return "required property is missing"
    if kind == "literal_error":
        return f"expected {ctx.get('expected')}, found {_short(found)}"
    expected = {
        "string_type": "a string",
        "int_type": "an integer",
        "bool_type": "a boolean",
        "dict_type": "an object",
        "list_type": "an array",
        "model_type": "an object",
        "model_attributes_type": "an object",
    }.get(kind)
    if expected is not None:
        return f"expected {expected}, found {_short(found)}"
    return f"{err['msg']}, found {_short(found)}"


def _short(value: Any) -> str:
    if isinstance(value, dict | list):
        return json_kind(value)
    if value is None:
        return "null"
    text = json.dumps(value) if isinstance(value, str | int | float | bool) or value is None else repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{json_kind(value)} {text}"


# Values orjson would quietly turn into strings (datetimes, dataclasses, str subclasses) are not
# JSON: refuse them rather than store something that loads back different.
_DUMP_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


NOT_PARSED: Any = object()
"""What `loads_fast` returns for text orjson refuses."""


def loads_fast(raw: str | bytes) -> Any:
    """Parse with pydantic-core's parser; NOT_PARSED when it refuses (then `parse_json` decides).

    Not orjson: it silently turns integers beyond 64 bits into floats, which would lose data.
    """
    try:
        return from_json(raw, allow_inf_nan=False, cache_strings="keys")
    except ValueError:
        return NOT_PARSED


def dumps(doc: Doc) -> str:
    """Serialize a document to compact JSON text; values that are not JSON raise InvalidState."""
    try:
        return orjson.dumps(doc, option=_DUMP_OPTIONS).decode()
    except TypeError:
        pass  # integers beyond 64 bits, or a value that is not JSON at all: decided below
    try:
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidState(f"the state holds a value that is not JSON: {exc}") from None
    try:
        text.encode()
    except UnicodeEncodeError:
        # A lone surrogate (valid in JSON, not in UTF-8): escaped, the text stays writable.
        text = json.dumps(doc, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text
