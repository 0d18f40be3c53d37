"""``LocalHost``: the aiohttp server tying HTTP triggers, entities and orchestrations together."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import os
import pathlib
import secrets
import socket
import sys
import threading
from collections.abc import Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from ._errors import DevHostError
from ._settings import DEFAULT_MAX_STATE_BYTES, KEY_ENV, MAX_STATE_ENV, HostSettings
from ._sqlite import DB_NAME
from .worker import Workers, WorkerSpec, process_count, script_spec, topology_from

if TYPE_CHECKING:
    from aiohttp import web

    from .durable_api import DurableApi
    from .entities import EntityGateway, EntityStore
    from .functions import AppModel, HttpDispatcher
    from .mcp import McpEndpoint
    from .orchestrations import OrchestrationEngine

# The host's own parts (the HTTP server, the durable backend, the runtime's types the durable API
# converts with) load on another thread while the worker processes start and import the app,
# which takes longer: only the worker's process (the `python -m devhost.worker` modules) starts
# before them. The MCP extension's endpoints, whose SDK alone is over half a second of CPU, load
# on the first request to them (`_mount_mcp`): most hosts are never asked, and on two cores the
# import competes with the workers' own.
_HOST_PARTS = ("aiohttp.web", "devhost._origin", "devhost.durable_api", "devhost.entities",
               "devhost.functions", "devhost.orchestrations")
# CPython before 3.12 keeps the compiler's AST recursion depth per interpreter, not per thread, so
# compiling on two threads at once can leave it wrong ("AST constructor recursion depth mismatch"
# on every later compile; python/cpython#106905): there the import waits for the metadata.
_IMPORT_ON_A_THREAD = sys.version_info >= (3, 12)

T = TypeVar("T")
_CONNECTION_NAME = "Storage"
DATA_DIR_ENV = "DEVHOST_DATA_DIR"
ORCHESTRATION_DELAY_ENV = "DEVHOST_ORCHESTRATION_DELAY_SECONDS"
"""Seconds every message to an orchestration waits before its episode runs (default 0): the
latency of Azure Storage's polled control queues, so a test can see an orchestration's hops
overtaken by a direct entity signal."""
"""Given to the worker processes: the host's data directory (the app may keep per-host files there)."""


def _load_host_parts() -> None:
    for name in _HOST_PARTS:
        importlib.import_module(name)


def _reset_sdk_http_session() -> None:
    """Forget the Durable SDK's process-wide aiohttp session bound to a stopped loop.

    The real worker has one loop for its lifetime; tests create a host (and loop) per test.
    """
    try:
        from azure.durable_functions.models.utils import http_utils
    except ImportError:
        return
    http_utils._client_session = None
    http_utils._session_lock = asyncio.Lock()


def _max_state_bytes() -> int:
    configured = os.environ.get(MAX_STATE_ENV, "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return DEFAULT_MAX_STATE_BYTES


class LocalHost:
    """A local Functions + Durable host for one function app (embeddable in tests)."""

    def __init__(
        self,
        app: Any,
        data_dir: str | os.PathLike[str],
        port: int = 0,
        function_key: str | None = None,
        *,
        host: str = "127.0.0.1",
        project_dir: str | os.PathLike[str] | None = None,
        max_batch: int | None = None,
        max_state_bytes: int | None = None,
        topology: str | None = None,
        worker_processes: int | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        """``app`` is the app's module name (``function_app``; ``module:attr``), loaded by worker
        processes with the real runtime, or an app object (tests), run by the same runtime in this
        process. ``topology`` is ``single`` or ``flex`` (default: ``DEVHOST_TOPOLOGY``);
        ``worker_processes`` per group defaults to ``FUNCTIONS_WORKER_PROCESS_COUNT``."""
        self._app_target = app
        self.data_dir = pathlib.Path(data_dir)
        self.port = port
        self.host = host
        self.function_key = function_key if function_key is not None else os.environ.get(KEY_ENV) or None
        self.project_dir = pathlib.Path(project_dir) if project_dir else pathlib.Path.cwd()
        self.settings = HostSettings.load(self.project_dir)
        # host.json's maxEntityOperationBatchSize (the extension's default when absent), unless
        # the caller (--max-batch) chooses.
        self.max_batch = max_batch or self.settings.max_entity_operation_batch_size
        self.max_state_bytes = max_state_bytes or _max_state_bytes()
        self.log = logger or logging.getLogger("devhost")
        # The durable client binding's channel: a fresh key per process, in rpcBaseUrl's path.
        self.rpc_key = secrets.token_urlsafe(24)
        self.topology = topology_from(topology)
        self.worker_processes = worker_processes or process_count()
        # Entity batches the host runs at once (see HostSettings.entity_batches_at_once); in the
        # worker a sync entity function takes one of the runtime's threads
        # (PYTHON_THREADPOOL_THREAD_COUNT), a coroutine function runs on its event loop.
        self.entity_concurrency = self.settings.entity_batches_at_once
        self.workers: Workers | None = None
        self.durable_api: DurableApi | None = None
        self._dispatcher: HttpDispatcher | None = None
        self.model: AppModel | None = None
        self.entities: EntityGateway | None = None
        self.engine: OrchestrationEngine | None = None
        self.engine_error: str | None = None
        self.mcp: McpEndpoint | None = None
        self._store: EntityStore | None = None
        self._runner: web.AppRunner | None = None
        self._listening: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def db_path(self) -> pathlib.Path:
        """The SQLite file holding entity and orchestration state."""
        return self.data_dir / DB_NAME

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:7071`` (valid after ``start``)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def rpc_base_url(self) -> str:
        from .durable_api import RPC_PREFIX

        return f"{self.url}{RPC_PREFIX}{self.rpc_key}/"

    @property
    def webhook_base_url(self) -> str:
        from .durable_api import WEBHOOK_PREFIX

        return f"{self.url}{WEBHOOK_PREFIX}"

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Load the app, open storage, redeliver pending work and start serving."""
        try:
            await self._start()
        except BaseException:
            await self.stop()  # release the port, the database and the threads
            raise

    async def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The port is held (listening) before any worker starts: a worker's runtime picks a free
        # port for its own HTTP server, and would otherwise be free to pick this one. A request
        # that comes before the host serves waits in the backlog.
        self._listening = _listen(self.host, self.port)
        self.port = int(self._listening.getsockname()[1])
        self.workers = workers = Workers(
            self._worker_spec(), topology=self.topology, count=self.worker_processes,
            temp_root=self.data_dir / "instances", log=self.log, timeout=self.settings.function_timeout,
        )
        if _IMPORT_ON_A_THREAD:
            metadata, _ = await asyncio.gather(workers.start(), asyncio.to_thread(_load_host_parts))
        else:
            metadata = await workers.start()
            _load_host_parts()
        from aiohttp import web

        from ._origin import loopback_middleware
        from .durable_api import DurableApi
        from .entities import EntityGateway, EntityStore
        from .functions import HttpDispatcher, index_metadata, key_matches
        from .orchestrations import OrchestrationEngine

        self.model = index_metadata(metadata)
        self._store = EntityStore(self.db_path)
        await self._store.run(self._store.open)
        self.entities = EntityGateway(
            store=self._store,
            model=self.model,
            functions=workers,
            logger=self.log,
            max_batch=self.max_batch,
            max_state_bytes=self.max_state_bytes,
            concurrency=self.entity_concurrency,
        )
        message_delay = _delay_from_env()  # a bad value stops the host, as a bad host.json does
        try:
            # HTTP and entities stay usable while the engine cannot start; the endpoints say why.
            self.engine = OrchestrationEngine(
                db_path=self.db_path, workers=workers, model=self.model, entities=self.entities,
                logger=self.log,
                max_activities=self.settings.max_concurrent_activity_functions or 10 * (os.cpu_count() or 1),
                message_delay=message_delay,
                client_binding=lambda binding: self.client_binding(
                    task_hub=binding.get("taskHub"), connection_name=binding.get("connectionName")
                ),
            )
        except Exception as exc:
            self.log.exception("the orchestration engine failed to initialise")
            self.engine_error = f"the orchestration engine failed to initialise: {exc!r}"
        self.durable_api = api = DurableApi(
            entities=self.entities,
            engine=self.engine,
            engine_error=self.engine_error,
            management_urls=self.management_urls,
            check_key=lambda request: key_matches(request, self.function_key),
            logger=self.log,
            rpc_key=self.rpc_key,
        )
        self._dispatcher = dispatcher = HttpDispatcher(
            functions=self.model.http,
            route_prefix=self.settings.route_prefix,
            function_key=lambda: self.function_key,
            client_binding=lambda binding: self.client_binding(
                task_hub=binding.get("taskHub"), connection_name=binding.get("connectionName")
            ),
            workers=workers,
            logger=self.log,
            log_hidden=(self.rpc_key,),
        )
        # aiohttp's own read limit binds the durable API (the trigger dispatcher reads bodies
        # itself, with the Functions host's limit): its bodies are entity inputs and states.
        # Every route, MCP's included, refuses foreign Host and Origin headers on loopback.
        web_app = web.Application(client_max_size=4 * self.max_state_bytes,
                                  middlewares=[loopback_middleware(self.host)])
        web_app.add_routes(api.routes())
        if self.model.mcp_tools:
            self._mount_mcp(web_app, self.model)
        # [\s\S], not '.': a path with an encoded newline must reach the dispatcher (and get a
        # problem answer), not aiohttp's plain-text 404.
        web_app.router.add_route("*", r"/{tail:[\s\S]*}", dispatcher.handle)
        # In-flight requests (long polls) get a short grace period, not aiohttp's 60 s.
        self._runner = web.AppRunner(web_app, access_log=None, handle_signals=False, shutdown_timeout=3.0)
        await self._runner.setup()
        await web.SockSite(self._runner, self._listening).start()
        redelivered = await self.entities.start()
        if redelivered:
            self.log.info("redelivering pending operations of %d entit%s", redelivered,
                          "y" if redelivered == 1 else "ies")
        if self.engine is not None:
            await self.engine.start()
        else:
            self.log.warning("orchestrations disabled: %s", self.engine_error)

    def _worker_spec(self) -> WorkerSpec:
        """How worker processes load the app: its script file, as the runtime imports it."""
        project = str(self.project_dir)
        # The worker's sys.path as the host's (the project first), so the app imports what it would.
        sys_path = [project, *[p for p in sys.path if p and p != project]]
        if not isinstance(self._app_target, str):
            from .functions import load_app

            app = load_app(self._app_target)
            return WorkerSpec(function_app_directory=project, app=app, sys_path=sys_path)
        directory, script = script_spec(self._app_target, self.project_dir)
        # The host's data directory, for files the app keeps per host (every worker group shares
        # it, as instances share a real store; the temp dir is per group in the flex topology).
        environment = {DATA_DIR_ENV: str(self.data_dir.resolve())}
        return WorkerSpec(
            function_app_directory=directory, script_file=script, sys_path=sys_path, environment=environment
        )

    def _mount_mcp(self, web_app: web.Application, model: AppModel) -> None:
        """Mount the MCP extension's routes; the endpoint (and the MCP SDK) is made and started on
        the first request to them, and serves every later one."""
        from . import mcp

        made = asyncio.Lock()

        async def handle(request: web.Request) -> web.StreamResponse:
            if self.mcp is None:
                async with made:
                    if self.mcp is None:
                        # The SDK's import is CPU work: on a thread, so the loop keeps serving
                        # (where a thread's compile cannot upset another's: _IMPORT_ON_A_THREAD).
                        if _IMPORT_ON_A_THREAD:
                            await asyncio.to_thread(getattr, mcp, "McpEndpoint")
                        endpoint = self._mcp_endpoint(model)
                        await endpoint.start()
                        self.mcp = endpoint
            return await self.mcp.handle(request)

        web_app.router.add_route("*", mcp.MCP_PREFIX, handle)
        web_app.router.add_route("*", mcp.MCP_PREFIX + "/{tail:.*}", handle)

    def _mcp_endpoint(self, model: AppModel) -> McpEndpoint:
        from .mcp import McpEndpoint, ToolRegistry

        assert self.workers is not None
        tools = ToolRegistry(
            model.mcp_tools,
            client_binding=lambda binding: self.client_binding(
                task_hub=binding.get("taskHub"), connection_name=binding.get("connectionName")
            ),
            workers=self.workers,
            logger=self.log,
        )
        # The extension's system key (mcp_extension) is the host's one key here; host.json can
        # make the endpoints anonymous as in Azure (extensions.mcp.system.webhookAuthorizationLevel).
        anonymous = self.settings.mcp_anonymous
        return McpEndpoint(tools, key=lambda: None if anonymous else self.function_key,
                           logger=self.log, instructions=self.settings.mcp_instructions)

    @property
    def mcp_url(self) -> str | None:
        """The MCP (streamable HTTP) endpoint, when the app has MCP tool triggers."""
        if self.model is None or not self.model.mcp_tools:
            return None
        from .mcp import MCP_PREFIX

        return f"{self.url}{MCP_PREFIX}"

    async def stop(self) -> None:
        """Stop serving; running entity batches get a few seconds, the rest is redelivered."""
        if self.durable_api is not None and self.durable_api.calls:
            # What the app asked of the durable backend (each a storage transaction or more in
            # Azure): entity reads are what waiting callers cost.
            calls = ", ".join(f"{kind}={count}" for kind, count in sorted(self.durable_api.calls.items()))
            self.log.info("durable API calls: %s", calls)
        if self.mcp is not None:
            await self.mcp.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._listening is not None:
            self._listening.close()  # the site's server closed it, unless the start failed first
            self._listening = None
        if self.engine is not None:
            await self.engine.stop()
        if self.entities is not None:
            await self.entities.stop()
        if self._dispatcher is not None:
            await self._dispatcher.close()
        if self.workers is not None:
            await self.workers.stop()
        if self._store is not None:
            await self._store.run(self._store.close)
            self._store.shutdown()
            self._store = None
        try:
            from azure.durable_functions.models.utils import http_utils

            session = http_utils._client_session
            if session is not None and not session.closed:
                with contextlib.suppress(Exception):
                    await session.close()
        except ImportError:
            pass
        _reset_sdk_http_session()

    # -- binding -----------------------------------------------------------------------

    def management_urls(self, instance_id: str) -> dict[str, str]:
        """Webhook URLs for one instance (``create_check_status_response``'s payload)."""
        from .durable_api import management_urls

        return management_urls(self.webhook_base_url, self.settings.task_hub, _CONNECTION_NAME,
                               self.function_key, instance_id)

    def client_binding(self, task_hub: str | None = None, connection_name: str | None = None) -> str:
        """The durable client binding JSON the Functions host passes to a client function."""
        from .durable_api import management_urls

        hub = task_hub or self.settings.task_hub
        connection = connection_name or _CONNECTION_NAME
        code = f"code={quote(self.function_key)}" if self.function_key else ""
        create = f"{self.webhook_base_url}orchestrators/{{functionName}}[/{{instanceId}}]"
        return json.dumps(
            {
                "taskHubName": hub,
                "connectionName": connection,
                "creationUrls": {
                    "createNewInstancePostUri": f"{create}?{code}" if code else create,
                    "createAndWaitOnNewInstancePostUri": f"{create}?timeout={{timeoutInSeconds}}"
                    f"&pollingInterval={{intervalInSeconds}}" + (f"&{code}" if code else ""),
                },
                "managementUrls": management_urls(
                    self.webhook_base_url, hub, connection, self.function_key, "INSTANCEID"
                ),
                "baseUrl": self.webhook_base_url.rstrip("/"),
                "requiredQueryStringParameters": code,
                "rpcBaseUrl": self.rpc_base_url,
                "httpBaseUrl": "",
                "maxGrpcMessageSizeInBytes": 0,
                "grpcHttpClientTimeout": "00:01:40",
            }
        )

    # -- embedding helpers ---------------------------------------------------------------

    def submit(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60) -> T:
        """Run ``coro`` on the host's loop from another thread (see ``run_in_thread``)."""
        if self._loop is None:
            raise DevHostError("host is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    @classmethod
    @contextlib.contextmanager
    def run_in_thread(cls, *args: Any, **kwargs: Any) -> Iterator[LocalHost]:
        """Run a host on its own loop in a background thread for the ``with`` block."""
        host = cls(*args, **kwargs)
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        errors: list[BaseException] = []

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(host.start())
            except BaseException as exc:
                errors.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(host.stop())
                loop.close()

        thread = threading.Thread(target=serve, name="devhost", daemon=True)
        thread.start()
        ready.wait(60)
        if errors:
            raise errors[0]
        try:
            yield host
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(60)


def _delay_from_env() -> float:
    raw = os.environ.get(ORCHESTRATION_DELAY_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:  # NaN fails too
        raise DevHostError(
            f"{ORCHESTRATION_DELAY_ENV} must be a number of seconds from 0 to 3600, not {raw!r}"
        )
    return value


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (0: any free port), as aiohttp's own site binds it."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
