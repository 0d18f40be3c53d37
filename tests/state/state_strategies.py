"""Hypothesis strategies of the `state` tests: stored documents (with unknown properties and
content types) and entries built with the API."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from state import (
    ChatMessage,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    ReasoningContent,
    TextContent,
    TurnFailure,
    UnknownContent,
    UriContent,
    Usage,
    UsageContent,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# No lone surrogates: they are not encodable as UTF-8 text, which is what the store holds.
text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
json_scalar = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


def extras(known: set[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Unknown properties: any names except the level's known ones (a known name is not unknown)."""
    return st.dictionaries(text.filter(lambda k: k not in known), json_value, max_size=2)


timestamp = st.sampled_from(
    ["2025-11-04T19:33:10.47008+00:00", "2026-01-01T00:00:00Z", "2027-02-03T04:05:06.1234567-07:00"]
) | st.datetimes().map(lambda d: d.isoformat())
opt_text = st.none() | text

usage = st.fixed_dictionaries(
    {},
    optional={
        "inputTokenCount": st.integers(0, 10**6),
        "outputTokenCount": st.integers(0, 10**6),
        "totalTokenCount": st.integers(0, 10**6),
    },
).flatmap(
    lambda d: extras({"inputTokenCount", "outputTokenCount", "totalTokenCount"}).map(lambda e: {**e, **d})
)

KNOWN_CONTENT: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # $type: (required fields, optional fields)
    "text": ({"text": text}, {}),
    "reasoning": ({}, {"text": opt_text}),
    "data": ({"uri": text}, {"mediaType": opt_text}),
    "uri": ({"uri": text, "mediaType": text}, {}),
    "error": ({}, {"message": opt_text, "errorCode": opt_text, "details": json_value}),
    "functionCall": (
        {"callId": text, "name": text},
        {"arguments": st.none() | st.dictionaries(text, json_value, max_size=3)},
    ),
    "functionResult": ({"callId": text}, {"result": json_value}),
    "hostedFile": ({"fileId": text}, {}),
    "hostedVectorStore": ({"vectorStoreId": text}, {}),
    "usage": ({"usage": usage}, {}),
    "unknown": ({"content": json_value}, {}),
}


def _content(tag: str) -> st.SearchStrategy[dict[str, Any]]:
    required, optional = KNOWN_CONTENT[tag]
    known = {"$type", *required, *optional}
    return st.tuples(st.fixed_dictionaries(required, optional=optional), extras(known)).map(
        lambda t: {"$type": tag, **t[1], **t[0]}
    )


opaque_content = st.tuples(
    st.sampled_from(["hologram", "functionApproval", "Text", "x-custom"]), extras({"$type"})
).map(lambda t: {**t[1], "$type": t[0]})
content = st.one_of([_content(tag) for tag in KNOWN_CONTENT] + [opaque_content])

message = st.tuples(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool"]) | text},
        optional={"contents": st.lists(content, max_size=3), "authorName": opt_text, "createdAt": timestamp},
    ),
    extras({"role", "contents", "authorName", "createdAt"}),
).map(lambda t: {**t[1], **t[0]})

_common = {"correlationId": st.none() | st.sampled_from(["a", "b", "c"]) | text, "createdAt": timestamp,
           "messages": st.lists(message, max_size=3)}  # fmt: skip
failure = st.fixed_dictionaries(
    {"code": text, "message": text},
    optional={"retryable": st.booleans(), "status": st.none() | st.integers(0, 599)},
)
request_entry = st.tuples(
    st.fixed_dictionaries(
        {},
        optional={
            **_common,
            "responseType": opt_text,
            "responseSchema": st.none() | st.dictionaries(text, json_value, max_size=2),
            "orchestrationId": opt_text,
        },
    ),
    extras({"$type", *_common, "responseType", "responseSchema", "orchestrationId"}),
).map(lambda t: {"$type": "request", **t[1], **t[0]})
response_entry = st.tuples(
    st.fixed_dictionaries(
        {}, optional={**_common, "usage": st.none() | usage, "failure": st.none() | failure}
    ),
    extras({"$type", *_common, "usage", "failure"}),
).map(lambda t: {"$type": "response", **t[1], **t[0]})

DATA_KNOWN = {"conversationHistory", "stateBag", "runs", "serviceThreadId"}
state_doc = st.builds(
    lambda version, history, data_extra, root_extra, bag, thread: {
        **root_extra,
        "schemaVersion": version,
        "data": {
            **data_extra,
            "conversationHistory": history,
            **({} if bag is None else {"stateBag": bag}),
            **({} if thread is None else {"serviceThreadId": thread}),
        },
    },
    st.sampled_from(["1.0.0", "1.1.0", "1.2.0", "1.3.5"]),
    st.lists(request_entry | response_entry, max_size=5),
    extras(DATA_KNOWN),
    extras({"schemaVersion", "data"}),
    st.none() | st.dictionaries(text, json_value, max_size=3),
    st.none() | text,
)


# --- what the API writes ---------------------------------------------------------------------

plain = st.text(st.characters(blacklist_categories=["Cs"]), max_size=10)
api_content = st.one_of(
    plain.map(lambda t: TextContent(text=t)),
    st.builds(ReasoningContent, text=st.none() | plain),
    st.builds(DataContent, uri=plain, media_type=st.none() | plain),
    st.builds(UriContent, uri=plain, media_type=plain),
    st.builds(ErrorContent, message=st.none() | plain, error_code=st.none() | plain, details=json_value),
    st.builds(
        FunctionCallContent,
        call_id=plain,
        name=plain,
        arguments=st.none() | st.dictionaries(plain, json_value, max_size=2),
    ),
    st.builds(FunctionResultContent, call_id=plain, result=json_value),
    st.builds(HostedFileContent, file_id=plain),
    st.builds(HostedVectorStoreContent, vector_store_id=plain),
    st.builds(UsageContent, usage=st.builds(Usage, input_token_count=st.none() | st.integers(0, 100))),
    st.builds(UnknownContent, content=json_value),
)
api_message = st.builds(
    ChatMessage,
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    contents=st.lists(api_content, max_size=3),
    author_name=st.none() | plain,
    created_at=st.none() | timestamp,
)
turn = st.tuples(
    st.sampled_from(["c1", "c2", "c3"]),
    st.lists(api_message, min_size=1, max_size=2),
    st.lists(api_message, max_size=2),
    st.none() | st.builds(TurnFailure, code=plain, message=plain, retryable=st.booleans()),
)


@st.composite
def mutated_doc(draw: st.DrawFn) -> dict[str, Any]:
    """A generated document with one node replaced by an arbitrary JSON value, or one key removed."""
    doc: Any = draw(state_doc)
    node: Any = doc
    # Walk down a random path, then change what is there.
    for _ in range(draw(st.integers(0, 8))):
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        children = [(k, v) for k, v in children if isinstance(v, dict | list) and v]
        if not children:
            break
        _, node = draw(st.sampled_from(children))
    keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
    if not keys:
        return dict(doc)
    key = draw(st.sampled_from(keys))
    if isinstance(node, dict) and draw(st.booleans()):
        del node[key]
    else:
        node[key] = draw(json_value | st.sampled_from(["request", "response", "text", "succeeded", 1, True]))
    return dict(doc)
