"""Pins the public names of ``devhost``."""

import devhost


def test_devhost_all_is_pinned() -> None:
    assert sorted(devhost.__all__) == [
        "AppLoadError",
        "DevHostError",
        "EntityGateway",
        "EntityIdError",
        "LocalHost",
        "RouteTemplateError",
        "encode_input",
        "list_functions",
        "main",
        "make_entity_id",
        "parse_entity_id",
    ]
    for name in devhost.__all__:
        assert getattr(devhost, name) is not None


def test_subpackage_public_names() -> None:
    import devhost.durable_api
    import devhost.entities
    import devhost.functions
    import devhost.mcp
    import devhost.orchestrations
    import devhost.worker

    assert sorted(devhost.durable_api.__all__) == [
        "DurableApi", "Engine", "RPC_PREFIX", "WEBHOOK_PREFIX", "management_urls",
    ]
    assert sorted(devhost.entities.__all__) == [
        "DEFAULT_MAX_BATCH", "DEFAULT_MAX_STATE_BYTES", "EntityGateway", "EntityStore", "Message",
        "NewMessage", "StoredResult", "encode_input", "make_entity_id", "parse_entity_id",
    ]
    assert sorted(devhost.functions.__all__) == [
        "AppModel", "HttpDispatcher", "HttpFunction", "KEY_ENV", "McpToolFunction",
        "NamedFunction",
        "RouteTemplate", "compile_route", "ensure_importable", "index_metadata", "key_matches",
        "list_functions", "load_app", "sort_key", "to_aiohttp",
    ]
    assert sorted(devhost.worker.__all__) == [
        "FunctionFailed", "FunctionTimedOut", "Group", "INIT_INDEXING_ENV", "InProcessWorker",
        "InvocationRequest",
        "InvocationResponse", "PROCESS_COUNT_ENV", "ProcessWorker", "RpcFunctionMetadata", "TOPOLOGY_ENV",
        "Topology", "TypedData", "WorkerDied", "WorkerGroup", "WorkerSpec", "Workers", "group_for",
        "groups_of", "invocation", "list_functions", "process_count", "script_spec", "topology_from",
    ]
    assert sorted(devhost.orchestrations.__all__) == [
        "EntityRuntime", "OrchestrationEngine", "RuntimeStatus", "TERMINAL_STATUSES",
    ]
    assert sorted(devhost.mcp.__all__) == [
        "MCP_PREFIX", "MESSAGE_PATH", "McpEndpoint", "SSE_PATH", "ToolRegistry", "input_schema",
        "serve_asgi", "to_call_result",
    ]
    packages = (devhost.durable_api, devhost.entities, devhost.functions, devhost.mcp, devhost.orchestrations,
                devhost.worker)
    for package in packages:
        for name in package.__all__:
            assert getattr(package, name) is not None


def test_runtime_status_has_the_sdk_values() -> None:
    from azure.durable_functions import OrchestrationRuntimeStatus

    from devhost.orchestrations import RuntimeStatus

    assert {s.value for s in RuntimeStatus} == {s.value for s in OrchestrationRuntimeStatus}
    assert all(isinstance(s, str) and s == s.value for s in RuntimeStatus)
