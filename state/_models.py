"""Pydantic models of the wire format: entries, messages, contents, usage and our 1.2.0 additions.

Every model keeps properties it does not know (``extra="allow"``) and is frozen: a stored entry is
a record, and the loaded JSON it came from is what gets written back.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_serializer
from pydantic_core.core_schema import SerializerFunctionWrapHandler

JSON = Any
"""Any JSON value (dict, list, str, int, float, bool or None)."""


class WireModel(BaseModel):
    """Base of the wire models: camelCase aliases on the wire, unknown properties kept."""

    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class Usage(WireModel):
    """Token counts of one response (or of a `usage` content)."""

    input_token_count: int | None = Field(default=None, alias="inputTokenCount")
    output_token_count: int | None = Field(default=None, alias="outputTokenCount")
    total_token_count: int | None = Field(default=None, alias="totalTokenCount")


# --- contents -------------------------------------------------------------------------------


class TextContent(WireModel):
    """Plain text."""

    type: Literal["text"] = Field(default="text", alias="$type")
    text: str


class ReasoningContent(WireModel):
    """Reasoning text a model produced alongside its answer."""

    type: Literal["reasoning"] = Field(default="reasoning", alias="$type")
    text: str | None = None


class DataContent(WireModel):
    """Inline data, usually a ``data:`` URI."""

    type: Literal["data"] = Field(default="data", alias="$type")
    uri: str
    media_type: str | None = Field(default=None, alias="mediaType")


class UriContent(WireModel):
    """A reference to content by URI."""

    type: Literal["uri"] = Field(default="uri", alias="$type")
    uri: str
    media_type: str = Field(alias="mediaType")


class ErrorContent(WireModel):
    """An error reported in place of (or inside) a message."""

    type: Literal["error"] = Field(default="error", alias="$type")
    message: str | None = None
    error_code: str | None = Field(default=None, alias="errorCode")
    details: JSON = None


class FunctionCallContent(WireModel):
    """A tool call requested by the model."""

    type: Literal["functionCall"] = Field(default="functionCall", alias="$type")
    call_id: str = Field(alias="callId")
    name: str
    arguments: dict[str, JSON] | None = None


class FunctionResultContent(WireModel):
    """The result of a tool call."""

    type: Literal["functionResult"] = Field(default="functionResult", alias="$type")
    call_id: str = Field(alias="callId")
    result: JSON = None


class HostedFileContent(WireModel):
    """A file held by the model service."""

    type: Literal["hostedFile"] = Field(default="hostedFile", alias="$type")
    file_id: str = Field(alias="fileId")


class HostedVectorStoreContent(WireModel):
    """A vector store held by the model service."""

    type: Literal["hostedVectorStore"] = Field(default="hostedVectorStore", alias="$type")
    vector_store_id: str = Field(alias="vectorStoreId")


class UsageContent(WireModel):
    """Token usage reported inside a message."""

    type: Literal["usage"] = Field(default="usage", alias="$type")
    usage: Usage


class UnknownContent(WireModel):
    """The format's own escape hatch: content the writer had no type for, serialized as JSON."""

    type: Literal["unknown"] = Field(default="unknown", alias="$type")
    content: JSON

    @model_serializer(mode="wrap")
    def _keep_content(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `content` is required by the published schema even when it is null, so it must
        # survive exclude_none.
        out: dict[str, Any] = handler(self)
        out.setdefault("content", self.content)
        return out


class OpaqueContent(WireModel):
    """Content of a `$type` this build does not know (e.g. from a newer minor), kept verbatim.

    All of its properties other than `$type` live in `model_extra`.
    """

    type: str = Field(alias="$type")


KNOWN_CONTENT_TYPES: dict[str, type[WireModel]] = {
    "text": TextContent,
    "reasoning": ReasoningContent,
    "data": DataContent,
    "uri": UriContent,
    "error": ErrorContent,
    "functionCall": FunctionCallContent,
    "functionResult": FunctionResultContent,
    "hostedFile": HostedFileContent,
    "hostedVectorStore": HostedVectorStoreContent,
    "usage": UsageContent,
    "unknown": UnknownContent,
}


def _content_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        tag = value.get("$type")
        if tag is None:
            tag = value.get("type")
        if not isinstance(tag, str):
            return None
        return tag if tag in KNOWN_CONTENT_TYPES else "__opaque__"
    if isinstance(value, OpaqueContent):
        return "__opaque__"
    tag = getattr(value, "type", None)
    return tag if isinstance(tag, str) and tag in KNOWN_CONTENT_TYPES else None


Content = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ReasoningContent, Tag("reasoning")]
    | Annotated[DataContent, Tag("data")]
    | Annotated[UriContent, Tag("uri")]
    | Annotated[ErrorContent, Tag("error")]
    | Annotated[FunctionCallContent, Tag("functionCall")]
    | Annotated[FunctionResultContent, Tag("functionResult")]
    | Annotated[HostedFileContent, Tag("hostedFile")]
    | Annotated[HostedVectorStoreContent, Tag("hostedVectorStore")]
    | Annotated[UsageContent, Tag("usage")]
    | Annotated[UnknownContent, Tag("unknown")]
    | Annotated[OpaqueContent, Tag("__opaque__")],
    Discriminator(
        _content_tag,
        custom_error_type="content_type",
        custom_error_message="content needs a string '$type'",
    ),
]
"""One item of a message's `contents`; an unknown `$type` becomes `OpaqueContent`."""


# --- messages and entries -------------------------------------------------------------------


class ChatMessage(WireModel):
    """One chat message; `role` is usually user, assistant, system or tool."""

    role: str
    contents: list[Content] = Field(default_factory=list)
    author_name: str | None = Field(default=None, alias="authorName")
    created_at: str | None = Field(default=None, alias="createdAt")

    @property
    def text(self) -> str:
        """The concatenated text of the message's text contents."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))


class TurnFailure(WireModel):
    """(1.2.0) Why a turn failed; set on the failed turn's response entry."""

    code: str
    message: str
    retryable: bool = False
    status: int | None = None


class AgentRequest(WireModel):
    """A request entry: the messages sent to the agent for one turn."""

    type: Literal["request"] = Field(default="request", alias="$type")
    correlation_id: str | None = Field(default=None, alias="correlationId")
    created_at: str | None = Field(default=None, alias="createdAt")
    messages: list[ChatMessage] = Field(default_factory=list)
    response_type: str | None = Field(default=None, alias="responseType")
    response_schema: dict[str, JSON] | None = Field(default=None, alias="responseSchema")
    orchestration_id: str | None = Field(default=None, alias="orchestrationId")


class AgentResponse(WireModel):
    """A response entry: what the agent answered for one turn (or, with `failure`, how it failed)."""

    type: Literal["response"] = Field(default="response", alias="$type")
    correlation_id: str | None = Field(default=None, alias="correlationId")
    created_at: str | None = Field(default=None, alias="createdAt")
    messages: list[ChatMessage] = Field(default_factory=list)
    usage: Usage | None = None
    failure: TurnFailure | None = None

    @property
    def failed(self) -> bool:
        """True for a failed turn: `failure` is set, or (older writers) every content is an error."""
        if self.failure is not None:
            return True
        contents = [c for m in self.messages for c in m.contents]
        return bool(contents) and all(isinstance(c, ErrorContent) for c in contents)


Entry = Annotated[AgentRequest | AgentResponse, Field(discriminator="type")]
"""One item of `data.conversationHistory`."""
