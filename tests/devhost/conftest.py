"""Fixtures for the local host's tests: test apps on sys.path and a running host."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import AsyncIterator

import aiohttp
import pytest

from devhost import LocalHost

APPS = pathlib.Path(__file__).parent / "apps"
if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))


@pytest.fixture
async def host(tmp_path: pathlib.Path) -> AsyncIterator[LocalHost]:
    """``basic_app`` served on a free port, no function key, data in a temp dir."""
    server = LocalHost("basic_app", tmp_path / "data", port=0, function_key="", project_dir=tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain HTTP client session."""
    async with aiohttp.ClientSession() as session:
        yield session
