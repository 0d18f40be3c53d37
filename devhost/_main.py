"""The command line: ``python -m devhost``, options in ``--help`` and docs/devhost.md."""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import logging
import os
import pathlib
import re
import shutil
import signal
import socket
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._errors import DevHostError
from ._logs import TraceIdFormatter
from ._settings import KEY_ENV, ensure_importable, load_local_settings
from ._sqlite import DB_NAME
from ._startup_hook import STARTUP_HOOK_ENV, run_startup_hook, stop_startup_hook

if TYPE_CHECKING:
    from ._host import LocalHost

# The host's parts (the HTTP server, the durable backend, the runtime's types: most of a second of
# imports) load only in the process that serves, and there while its worker processes start
# (devhost/_host.py): `make run`'s --reload watcher only starts that process, and loading them
# first would delay it.


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m devhost",
        description="Serve the function app locally: HTTP triggers, durable entities and "
        "orchestrations, state in SQLite. Function keys: set DEVHOST_FUNCTION_KEY.",
    )
    parser.add_argument("--app", default="function_app",
                        help="module (or module:attribute) holding the FunctionApp")
    parser.add_argument("--port", type=int, default=7071, help="port (default 7071, like func start)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--data-dir", default=".devhost", help="where state is kept (SQLite)")
    parser.add_argument("--reset", action="store_true", help="delete all local state first")
    parser.add_argument("--reload", action="store_true",
                        help="start again whenever a Python file of the project changes (make run does)")
    parser.add_argument("--max-batch", type=int, default=None,
                        help="most queued operations of one entity run as one batch (default: host.json's "
                        "extensions.durableTask.maxEntityOperationBatchSize, else 50, the Durable "
                        "extension's smaller default)")
    parser.add_argument("--max-state-bytes", type=int, default=None,
                        help="largest entity state accepted in bytes (default 1 MiB or "
                        "DEVHOST_MAX_STATE_BYTES)")
    parser.add_argument("--topology", choices=("single", "flex"), default=None,
                        help="single (default; DEVHOST_TOPOLOGY): every function in one group of worker "
                             "processes; flex: HTTP/MCP and Durable functions in separate groups, as Flex "
                             "Consumption scales them")
    parser.add_argument("--startup-hook", default=None, metavar="MODULE:FUNCTION",
                        help="called before the app is imported; its result's stop() at shutdown "
                        f"(default: {STARTUP_HOOK_ENV}, which local.settings.json may set)")
    return parser


def reset_data_dir(data_dir: pathlib.Path) -> bool:
    """Delete the host's files in ``data_dir``; refuses a directory that is not the host's."""
    if not data_dir.exists():
        return False
    entries = list(data_dir.iterdir())
    if entries and not (data_dir / DB_NAME).exists():
        raise DevHostError(f"{data_dir} does not look like a devhost data directory; not deleting it")
    shutil.rmtree(data_dir)
    return True


async def _serve(host: LocalHost, started: float) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await host.start()
    # The host is ready: what exists now lives as long as the process, so it is left out of
    # later collections. (The app lives in the worker processes; function_app.py freezes its
    # own objects at import, as it does in Azure's worker.) No collection first: the little
    # garbage it would free is not worth the 60 ms it held up the first answers.
    gc.freeze()
    log = host.log
    assert host.model is not None
    log.info("Functions:")
    prefix = host.settings.route_prefix
    for function in host.model.http:
        methods = ",".join(sorted(function.methods)) if function.methods else "*"
        route = "/".join(p for p in (prefix, function.route.template.strip("/")) if p)
        # A catch-all route (a site, a static folder) is listed as the URL to open in a browser.
        openable = re.sub(r"/?\{\*[^}]*\}$", "/", route)
        suffix = " (and everything below it)" if openable != route else ""
        log.info("  %s: [%s] %s/%s%s", function.name, methods, host.url, openable, suffix)
    for kind, names in (("entity", host.model.entities), ("orchestrator", host.model.orchestrators),
                        ("activity", host.model.activities)):
        for item in names.values():
            log.info("  %s: %s", item.function_name, kind)
    if host.mcp_url is not None:
        tools = ", ".join(f.tool_name for f in host.model.mcp_tools)
        log.info("MCP server (streamable HTTP): %s  tools: %s", host.mcp_url, tools)
        log.info("MCP server (legacy SSE): %s/sse", host.mcp_url)
    for problem in host.model.unsupported:
        log.warning("  %s", problem)
    if not host.function_key:
        log.warning("function keys are not enforced: set %s to require one", KEY_ENV)
    log.info("devhost ready on %s in %.2fs (data: %s)", host.url, time.monotonic() - started,
             host.data_dir)
    await stop.wait()
    log.info("stopping")
    await host.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the local host until Ctrl-C / SIGTERM."""
    started = time.monotonic()
    args = _parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TraceIdFormatter("%(asctime)s %(levelname).1s %(message)s", datefmt="%H:%M:%S"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    # One line per request: the model client's per-call transport lines would double them.
    for transport in ("httpx", "httpx2"):
        logging.getLogger(transport).setLevel(logging.WARNING)
    # The MCP SDK's transports log each session's start and end; devhost logs each request.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    log = logging.getLogger("devhost")
    project = pathlib.Path.cwd()
    data_dir = pathlib.Path(args.data_dir)
    if not data_dir.is_absolute():
        data_dir = project / data_dir
    try:
        if args.reset and reset_data_dir(data_dir):
            log.info("--reset: deleted %s", data_dir)
        check_port_free(args.host, args.port)
        if args.reload:
            # The watcher serves nothing itself; each host it starts gets the same arguments,
            # except that the data is reset once, here.
            from ._reload import supervise

            given = list(sys.argv[1:] if argv is None else argv)
            return supervise([a for a in given if a not in ("--reload", "--reset")], project, data_dir)
        from ._host import LocalHost

        ensure_importable(str(project))
        load_local_settings(project, log)
        os.environ.setdefault("FUNCTIONS_WORKER_RUNTIME", "python")
        # As func start does (localhost:7071) and Azure does (<app>.azurewebsites.net): the
        # address clients reach the app at, for the URLs it hands out.
        os.environ.setdefault("WEBSITE_HOSTNAME", f"{args.host}:{args.port}")
        hook_result = run_startup_hook(args.startup_hook or os.environ.get(STARTUP_HOOK_ENV), log)
        kwargs = {}
        if args.max_batch is not None:
            kwargs["max_batch"] = args.max_batch
        if args.max_state_bytes is not None:
            kwargs["max_state_bytes"] = args.max_state_bytes
        host = LocalHost(args.app, data_dir, port=args.port, host=args.host, project_dir=project,
                         topology=args.topology, **kwargs)
        try:
            asyncio.run(_serve(host, started))
        finally:
            stop_startup_hook(hook_result)
    except DevHostError as exc:
        log.error("%s", exc)
        return 2
    except OSError as exc:
        log.error("cannot start: %s", busy_port_message(args.host, args.port) if _in_use(exc) else exc)
        return 2
    return 0


def _in_use(exc: OSError) -> bool:
    return exc.errno == errno.EADDRINUSE or "address already in use" in str(exc).lower()


def busy_port_message(host: str, port: int) -> str:
    """What to do when the port is taken (another devhost, or `func start`, on it)."""
    return (
        f"port {port} on {host} is already in use (another devhost or `func start`?): stop it, or "
        f"pick another port with --port N (make run ARGS='--port N')"
    )


def check_port_free(host: str, port: int) -> None:
    """Refuse a taken port before any worker starts, with what to do about it."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the server binds (asyncio sets SO_REUSEADDR): only a listener holds the port.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if _in_use(exc):
                raise DevHostError(busy_port_message(host, port)) from None
            raise
