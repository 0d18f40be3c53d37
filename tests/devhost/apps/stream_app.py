"""A function app on the HTTP streaming types (every function takes FastAPI's request)."""

from __future__ import annotations

import azure.functions as func
from azurefunctions.extensions.http.fastapi import PlainTextResponse, Request

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@app.route(route="peek", methods=["GET"])
async def peek(req: Request) -> PlainTextResponse:
    # Never reads the body: what a GET handler does.
    return PlainTextResponse("peeked")


@app.route(route="size", methods=["POST"])
async def size(req: Request) -> PlainTextResponse:
    return PlainTextResponse(str(len(await req.body())))


@app.route(route="echo/{word}", methods=["GET"])
async def echo_word(req: Request) -> PlainTextResponse:
    return PlainTextResponse(req.path_params["word"])
