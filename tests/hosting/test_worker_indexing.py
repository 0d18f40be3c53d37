"""What the Functions Python worker checks when it indexes the app: every trigger and input
parameter is annotated with a type the binding's converter accepts (azure.functions' rules, the
ones azure-functions-runtime applies), the durable client binding's `rpcBaseUrl` is read from the
binding itself, and the app refuses to start without `PYTHON_ENABLE_INIT_INDEXING`."""

from __future__ import annotations

import json
import typing

import azure.durable_functions as df
import azure.functions as func
import pytest
from hosting_support import make_agents

from agents.testing import ModelServer
from examples.review import review_workflow
from hosting import build_app
from hosting._errors import HostingConfigurationError
from hosting.client._binding import BoundClient
from hosting.http._edge import INIT_INDEXING_SETTING

# Bindings whose parameter type the worker checks with the binding's converter. The HTTP request
# parameter is left out: with the HTTP streams types the worker checks it through the extension.
_CHECKED = {"entityTrigger", "activityTrigger", "orchestrationTrigger", "durableClient", "mcpToolTrigger"}


def test_every_trigger_and_input_parameter_has_an_annotation_the_worker_accepts(
    model_server: ModelServer,
) -> None:
    app = build_app(make_agents(model_server), extensions=[review_workflow()], mcp_tools=True)
    registry = func.get_binding_registry()
    checked: set[str] = set()
    for function in app.get_functions():
        user_function = function.get_user_function()
        hints = typing.get_type_hints(user_function)
        for binding in function.get_bindings():
            if binding.type not in _CHECKED or binding.name not in hints:
                continue
            annotation = hints[binding.name]
            where = f"{function.get_function_name()}({binding.name}: {annotation!r})"
            assert isinstance(annotation, type), f"not a type (the worker refuses it): {where}"
            assert registry.get(binding.type).check_input_type_annotation(annotation), where
            checked.add(binding.type)
        if "context" in hints and all(b.name != "context" for b in function.get_bindings()):
            assert hints["context"] is func.Context, function.get_function_name()
    assert checked == _CHECKED


def test_the_durable_client_reads_rpc_base_url_from_its_binding() -> None:
    binding = {
        "taskHubName": "hub",
        "creationUrls": {},
        "managementUrls": {},
        "baseUrl": "http://127.0.0.1:7071/runtime/webhooks/durabletask",
        "requiredQueryStringParameters": "",
        "rpcBaseUrl": "http://127.0.0.1:17071/durabletask/",
        "httpBaseUrl": "",
    }
    client = BoundClient(json.dumps(binding))
    assert client.rpc_base_url == "http://127.0.0.1:17071/durabletask/"
    assert isinstance(client, df.DurableOrchestrationClient)
    assert BoundClient(json.dumps({**binding, "rpcBaseUrl": ""})).rpc_base_url is None


@pytest.mark.parametrize("value", [None, "0", "false", ""])
def test_the_app_refuses_to_start_without_init_indexing(
    value: str | None, model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv(INIT_INDEXING_SETTING, raising=False)
    else:
        monkeypatch.setenv(INIT_INDEXING_SETTING, value)
    with pytest.raises(HostingConfigurationError, match=INIT_INDEXING_SETTING):
        build_app(make_agents(model_server))
    monkeypatch.setenv(INIT_INDEXING_SETTING, "true")
    assert build_app(make_agents(model_server)).get_functions()
