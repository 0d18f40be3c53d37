"""Hosting's log lines never carry a URL's query (it may hold the function key)."""

from __future__ import annotations

import logging
from typing import Any

import azure.functions as func
import pytest

from hosting.http._api import guarded


async def test_unexpected_error_log_has_no_query(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(req: func.HttpRequest, client: Any) -> func.HttpResponse:
        raise RuntimeError("bug")

    req = func.HttpRequest(method="GET", url="https://app.example/api/agents?code=fn-key-123&sig=s-456",
                           body=b"", params={"code": "fn-key-123", "sig": "s-456"})
    with caplog.at_level(logging.ERROR, logger="hosting"):
        response = await guarded(broken)(req, None)
    assert response.status_code == 500
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "/api/agents" in text
    assert "fn-key-123" not in text and "s-456" not in text
