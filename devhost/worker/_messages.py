"""The messages of the Functions language-worker protocol (FunctionRpc) that the Python runtime uses.

``azure-functions-runtime`` never imports gRPC: its host (the proxy worker in Azure, this host
here) hands it the message classes at worker init (``properties={"protos": ..., "host": ...}``),
and it builds and reads messages only through their attributes, the ``WhichOneof`` of a oneof
group, and enum values held by the message classes. These classes are written from the public
protocol description: the field names are the protocol's, in snake case as the protobuf Python
API exposes them; only the fields this host and the runtime use are here.

Messages cross the process boundary between the host and a worker process pickled (both ends are
this package: see ``_channel.py``).
"""

from __future__ import annotations

import builtins
import types
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar


class Message:
    """Protobuf-like behaviour: a oneof group reports which of its fields is set."""

    ONEOFS: ClassVar[dict[str, tuple[str, ...]]] = {}

    def WhichOneof(self, group: str) -> str | None:
        for name in self.ONEOFS.get(group, ()):
            if getattr(self, name) is not None:
                return name
        return None

    def HasField(self, name: str) -> bool:
        return getattr(self, name, None) is not None

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)  # type: ignore[arg-type]
                          if getattr(self, f.name) not in (None, "", {}, []))
        return f"{type(self).__name__}({shown})"


@dataclass(repr=False)
class RpcException(Message):
    message: str = ""
    stack_trace: str = ""
    source: str = ""
    is_user_exception: bool = False


@dataclass(repr=False)
class StatusResult(Message):
    Failure: ClassVar[int] = 0
    Success: ClassVar[int] = 1
    Cancelled: ClassVar[int] = 2

    status: int = 0
    result: str = ""
    exception: RpcException | None = None


@dataclass(repr=False)
class WorkerMetadata(Message):
    runtime_name: str = ""
    runtime_version: str = ""
    worker_version: str = ""
    worker_bitness: str = ""
    custom_properties: dict[str, str] = field(default_factory=dict)


@dataclass(repr=False)
class WorkerInitRequest(Message):
    host_version: str = ""
    capabilities: dict[str, str] = field(default_factory=dict)
    log_categories: dict[str, int] = field(default_factory=dict)
    worker_directory: str = ""
    function_app_directory: str = ""


@dataclass(repr=False)
class WorkerInitResponse(Message):
    worker_version: str = ""
    capabilities: dict[str, str] = field(default_factory=dict)
    result: StatusResult | None = None
    worker_metadata: WorkerMetadata | None = None


@dataclass(repr=False)
class FunctionsMetadataRequest(Message):
    function_app_directory: str = ""


@dataclass(repr=False)
class BindingInfo(Message):
    # Direction
    in_: ClassVar[int] = 0
    out: ClassVar[int] = 1
    inout: ClassVar[int] = 2
    # DataType
    undefined: ClassVar[int] = 0
    string: ClassVar[int] = 1
    binary: ClassVar[int] = 2
    stream: ClassVar[int] = 3

    type: str = ""
    direction: int = 0
    data_type: int = 0
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(repr=False)
class RpcRetryOptions(Message):
    max_retry_count: int = 0
    retry_strategy: Any = None
    minimum_interval: Any = None
    maximum_interval: Any = None
    delay_interval: Any = None


@dataclass(repr=False)
class RpcFunctionMetadata(Message):
    name: str = ""
    function_id: str = ""
    directory: str = ""
    script_file: str = ""
    entry_point: str = ""
    language: str = ""
    is_proxy: bool = False
    managed_dependency_enabled: bool = False
    bindings: dict[str, BindingInfo] = field(default_factory=dict)
    raw_bindings: list[str] = field(default_factory=list)
    retry_options: RpcRetryOptions | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(repr=False)
class FunctionMetadataResponse(Message):
    function_metadata_results: list[RpcFunctionMetadata] | None = None
    result: StatusResult | None = None
    use_default_metadata_indexing: bool = False


@dataclass(repr=False)
class FunctionLoadRequest(Message):
    function_id: str = ""
    managed_dependency_enabled: bool = False


@dataclass(repr=False)
class FunctionLoadResponse(Message):
    function_id: str = ""
    result: StatusResult | None = None
    is_dependency_downloaded: bool = False


@dataclass(repr=False)
class NullableString(Message):
    value: str | None = None


@dataclass(repr=False)
class NullableBool(Message):
    value: bool | None = None


@dataclass(repr=False)
class NullableDouble(Message):
    value: float | None = None


@dataclass(repr=False)
class NullableTimestamp(Message):
    value: Any = None


# The protobuf enum's values, in a namespace so that ``SameSite.None`` reads as in protobuf.
_SAME_SITE = types.SimpleNamespace(Lax=1, Strict=2, ExplicitNone=3)
setattr(_SAME_SITE, "None", 0)


@dataclass(repr=False)
class RpcHttpCookie(Message):
    SameSite: ClassVar[Any] = _SAME_SITE

    name: str = ""
    value: str = ""
    domain: NullableString | None = None
    path: NullableString | None = None
    expires: NullableTimestamp | None = None
    secure: NullableBool | None = None
    http_only: NullableBool | None = None
    same_site: int = 0
    max_age: NullableDouble | None = None


@dataclass(repr=False)
class RpcHttp(Message):
    method: str = ""
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: TypedData | None = None
    params: dict[str, str] = field(default_factory=dict)
    status_code: str = ""
    query: dict[str, str] = field(default_factory=dict)
    enable_content_negotiation: bool = False
    raw_body: TypedData | None = None
    cookies: list[RpcHttpCookie] = field(default_factory=list)


@dataclass(repr=False)
class TypedData(Message):
    ONEOFS: ClassVar[dict[str, tuple[str, ...]]] = {
        "data": ("string", "json", "bytes", "stream", "http", "int", "double", "collection_bytes",
                 "collection_string", "collection_double", "collection_sint64", "model_binding_data",
                 "collection_model_binding_data"),
    }

    string: str | None = None
    json: str | None = None
    bytes: builtins.bytes | None = None
    stream: builtins.bytes | None = None
    http: RpcHttp | None = None
    int: builtins.int | None = None
    double: float | None = None
    collection_bytes: Any = None
    collection_string: Any = None
    collection_double: Any = None
    collection_sint64: Any = None
    model_binding_data: Any = None
    collection_model_binding_data: Any = None


@dataclass(repr=False)
class ParameterBinding(Message):
    ONEOFS: ClassVar[dict[str, tuple[str, ...]]] = {"rpc_data": ("data", "rpc_shared_memory")}

    name: str = ""
    data: TypedData | None = None
    rpc_shared_memory: Any = None


@dataclass(repr=False)
class RpcTraceContext(Message):
    trace_parent: str = ""
    trace_state: str = ""
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(repr=False)
class RetryContext(Message):
    retry_count: int = 0
    max_retry_count: int = 0
    exception: RpcException | None = None


@dataclass(repr=False)
class InvocationRequest(Message):
    invocation_id: str = ""
    function_id: str = ""
    input_data: list[ParameterBinding] = field(default_factory=list)
    trigger_metadata: dict[str, TypedData] = field(default_factory=dict)
    trace_context: RpcTraceContext = field(default_factory=RpcTraceContext)
    retry_context: RetryContext = field(default_factory=RetryContext)


@dataclass(repr=False)
class InvocationResponse(Message):
    invocation_id: str = ""
    output_data: list[ParameterBinding] = field(default_factory=list)
    return_value: TypedData | None = None
    result: StatusResult | None = None


@dataclass(repr=False)
class StreamingMessage(Message):
    """The envelope: one request or response, by its oneof field's name."""

    ONEOFS: ClassVar[dict[str, tuple[str, ...]]] = {
        "content": ("worker_init_request", "worker_init_response", "functions_metadata_request",
                    "function_metadata_response", "function_load_request", "function_load_response",
                    "invocation_request", "invocation_response"),
    }

    request_id: str = ""
    worker_init_request: WorkerInitRequest | None = None
    worker_init_response: WorkerInitResponse | None = None
    functions_metadata_request: FunctionsMetadataRequest | None = None
    function_metadata_response: FunctionMetadataResponse | None = None
    function_load_request: FunctionLoadRequest | None = None
    function_load_response: FunctionLoadResponse | None = None
    invocation_request: InvocationRequest | None = None
    invocation_response: InvocationResponse | None = None
