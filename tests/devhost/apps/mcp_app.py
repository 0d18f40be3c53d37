"""A function app with MCP tool triggers of every result shape the extension accepts."""

from __future__ import annotations

import json

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)

TEXT_PROPERTY = json.dumps(
    [
        {"propertyName": "text", "propertyType": "string", "description": "What to echo.",
         "isRequired": True, "isArray": False},
        {"propertyName": "tags", "propertyType": "string", "description": "Labels.",
         "isRequired": False, "isArray": True},
    ]
)


@app.function_name("echo_tool")
@app.generic_trigger(arg_name="context", type="mcpToolTrigger", toolName="echo",
                     description="Echoes the text.", toolProperties=TEXT_PROPERTY)
def echo(context: str) -> str:
    # A sync function: run on the host's thread pool, its string becomes one text block.
    return "echo: " + json.loads(context)["arguments"]["text"]


@app.function_name("context_tool")
@app.generic_trigger(arg_name="context", type="mcpToolTrigger", toolName="context",
                     description="Returns the context it was given.", toolProperties="[]")
async def context_tool(context: str) -> str:
    return context


@app.function_name("boom_tool")
@app.generic_trigger(arg_name="context", type="mcpToolTrigger", toolName="boom",
                     description="Always raises.", toolProperties="[]")
def boom(context: str) -> str:
    raise RuntimeError("secret detail that must not reach the client")


@app.function_name("rich_tool")
@app.generic_trigger(arg_name="context", type="mcpToolTrigger", toolName="rich",
                     description="Two text blocks and structured content.", toolProperties="[]",
                     useResultSchema=True)
async def rich(context: str) -> str:
    blocks = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    return json.dumps({"type": "multi_content_result", "content": json.dumps(blocks),
                       "structuredContent": json.dumps({"count": 2})})


@app.function_name("nothing_tool")
@app.generic_trigger(arg_name="context", type="mcpToolTrigger", toolName="nothing",
                     description="Returns nothing.", toolProperties="[]")
async def nothing(context: str) -> None:
    return None


@app.function_name("ping")
@app.route(route="ping", auth_level=func.AuthLevel.ANONYMOUS)
def ping(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("pong")
