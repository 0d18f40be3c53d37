"""The local services `make run` starts before the app (devhost's startup hook): the offline model
when no model is configured, and the example MCP server `examples.mcp_tools.timekeeper` uses.

Imported in the host process before any worker starts, so it imports no agent runtime.
"""

from __future__ import annotations

import os
import socket
import threading
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

URL_SETTING = "EXAMPLES_MCP_URL"
"""The app setting naming the example MCP server (set by `start_local_services` when unset)."""


def example_tools_app() -> Any:
    """The example MCP server (the SDK's server class) as an ASGI app: a clock and a reminder."""
    from mcp.server.mcpserver import MCPServer as ToolServer

    server = ToolServer("example-tools")

    @server.tool()
    def current_time(timezone: str = "UTC") -> str:
        """The current date and time in an IANA time zone such as "Europe/Paris"."""
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {timezone!r}") from None
        return datetime.now(UTC).astimezone(zone).isoformat(timespec="seconds")

    @server.tool()
    def set_reminder(text: str, at: str) -> str:
        """Set a reminder (a demo: nothing is sent). A person approves each one."""
        return f"reminder {text!r} set for {at}"

    return server.streamable_http_app()


class LocalServices:
    """What `start_local_services` started; devhost calls `stop()` when it exits."""

    def __init__(self, model: Any, server: Any, thread: threading.Thread | None) -> None:
        self.model, self.server, self.thread = model, server, thread

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(5)
        stop = getattr(self.model, "stop", None)
        if callable(stop):
            stop()


def start_local_services() -> LocalServices:
    """devhost's startup hook for `make run`: the offline model when no model is configured, and
    the example MCP server on a free loopback port unless `EXAMPLES_MCP_URL` names one."""
    import uvicorn

    from agents.testing import start_offline_model_if_unconfigured

    model = start_offline_model_if_unconfigured()
    if os.environ.get(URL_SETTING):
        return LocalServices(model, None, None)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # Listening now, a worker's first call waits in the backlog until the server accepts it. The
    # server's thread builds the app (a factory named as uvicorn imports it): the MCP SDK takes
    # about as long to import as the app itself, and the workers start meanwhile.
    sock.listen(128)
    config = uvicorn.Config(f"{__name__}:example_tools_app", factory=True, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="example-mcp", daemon=True)
    thread.start()
    os.environ[URL_SETTING] = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    return LocalServices(model, server, thread)
