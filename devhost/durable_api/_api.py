"""The Durable extension's HTTP API: the RPC endpoints the Python SDK's client calls
(under ``/durabletask/``) and the webhook URLs handed out in ``managementUrls`` (under
``/runtime/webhooks/durabletask/``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote

from aiohttp import web

from .._errors import EntityIdError
from .._problems import problem
from .._redact import loggable_url
from ..entities import EntityGateway, encode_input, make_entity_id
from ..orchestrations import RuntimeStatus

RPC_PREFIX = "/durabletask/"
WEBHOOK_PREFIX = "/runtime/webhooks/durabletask/"
_TERMINAL = {RuntimeStatus.COMPLETED, RuntimeStatus.FAILED, RuntimeStatus.TERMINATED, RuntimeStatus.CANCELED}
_RUNNING_CODES = {
    RuntimeStatus.RUNNING, RuntimeStatus.PENDING, RuntimeStatus.CONTINUED_AS_NEW, RuntimeStatus.SUSPENDED
}


class Engine(Protocol):
    """The orchestration engine's interface (implemented in ``_orchestrations``)."""

    async def start_new(self, name: str, instance_id: str | None, input: Any) -> str: ...
    async def get_status(
        self, instance_id: str, *, show_history: bool, show_history_output: bool, show_input: bool
    ) -> dict[str, Any] | None: ...
    async def query(
        self,
        *,
        runtime_status: list[str] | None,
        created_from: datetime | None,
        created_to: datetime | None,
        instance_id_prefix: str | None,
    ) -> list[dict[str, Any]]: ...
    async def raise_event(self, instance_id: str, event_name: str, data: Any) -> bool: ...
    async def terminate(self, instance_id: str, reason: str) -> bool: ...
    async def purge(self, instance_id: str) -> bool: ...
    async def suspend(self, instance_id: str, reason: str) -> bool: ...
    async def resume(self, instance_id: str, reason: str) -> bool: ...


def _flag(request: web.Request, name: str, default: bool = False) -> bool:
    value = request.query.get(name)
    if value is None:
        return default
    return value.lower() in ("true", "1", "yes")


def _wire_time(value: Any) -> Any:
    """A status timestamp as the extension writes it: whole seconds, UTC, ``Z`` (``...T10:00:00Z``)."""
    if not isinstance(value, str) or not value:
        return value
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC)
    return parsed.strftime("%Y-%m-%dT%H:%M:%SZ")


def _wire_status(status: dict[str, Any]) -> dict[str, Any]:
    return {**status, "createdTime": _wire_time(status.get("createdTime")),
            "lastUpdatedTime": _wire_time(status.get("lastUpdatedTime"))}


# What the extension asks clients to wait before polling again: a running instance's status
# answer says 5 s, a check-status (202 after start or restart) answer 10 s.
_STATUS_RETRY_AFTER = "5"
_CHECK_STATUS_RETRY_AFTER = "10"
_CHECK_STATUS_KEYS = ("id", "statusQueryGetUri", "sendEventPostUri", "terminatePostUri",
                      "purgeHistoryDeleteUri", "restartPostUri", "suspendPostUri", "resumePostUri")


def _date(request: web.Request, name: str) -> datetime | None:
    value = request.query.get(name)
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


CONTINUATION_HEADER = "x-ms-continuation-token"
_DEFAULT_PAGE = 100  # the extension's default EntityQuery page size
_MAX_PAGE = 1000


def _page_size(request: web.Request) -> int:
    raw = request.query.get("top")
    if raw is None:
        return _DEFAULT_PAGE
    top = int(raw)  # a ValueError is the 400 bad_request of the guard
    if top < 1:
        raise ValueError("top must be a positive page size")
    return min(top, _MAX_PAGE)


def _encode_token(value: list[str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


def _token_parts(token: str, parts: int) -> list[str]:
    """The strings a continuation token this host handed out holds; ValueError for any other."""
    try:
        value = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
    except (ValueError, UnicodeError) as exc:
        raise ValueError("the continuation token is not one this host handed out") from exc
    if not (isinstance(value, list) and len(value) == parts and all(isinstance(v, str) for v in value)):
        raise ValueError("the continuation token is not one this host handed out")
    return value


def _entity_token(token: str | None) -> tuple[str, str] | None:
    """The (name, key) a continuation token resumes after; ValueError for a token not ours."""
    if not token:
        return None
    name, key = _token_parts(token, 2)
    return name, key


def _instance_token(token: str | None) -> str | None:
    """The instance id an instance query's continuation token resumes after; ValueError for a
    token not ours."""
    return _token_parts(token, 1)[0] if token else None


class DurableApi:
    """Handlers for the durable endpoints; mounted by the host on its aiohttp app."""

    def __init__(
        self,
        *,
        entities: EntityGateway,
        engine: Engine | None,
        engine_error: str | None,
        management_urls: Callable[[str], dict[str, str]],
        check_key: Callable[[web.Request], bool],
        logger: logging.Logger,
        rpc_key: str,
    ) -> None:
        self._entities = entities
        self._engine = engine
        self._engine_error = engine_error
        self._management_urls = management_urls
        self._check_key = check_key
        self._log = logger
        if not rpc_key or "/" in rpc_key:
            raise ValueError("the RPC key must be a non-empty path segment")
        self._rpc_key = rpc_key
        self.calls: Counter[str] = Counter()
        """Requests served per kind (`read_entity`, `signal_entity`, ...): in Azure each is one or
        more storage transactions, so the host reports them when it stops."""

    @property
    def rpc_prefix(self) -> str:
        """Path of the RPC channel: ``/durabletask/{rpc key}/``; no other path reaches it."""
        return f"{RPC_PREFIX}{self._rpc_key}/"

    def routes(self) -> list[web.RouteDef]:
        """Route table for both the RPC and the webhook base paths.

        The RPC channel is what the durable client binding calls (its ``rpcBaseUrl``); like the
        real extension's loopback-only listener it takes no function key, but it sits behind a
        per-process random key in its path, so only the binding (handed out to the app's own
        functions) can reach it. The webhook URLs take the function key when one is set.
        """
        table: list[tuple[str, str, Callable[[web.Request], Awaitable[web.StreamResponse]]]] = [
            ("POST", "orchestrators/{name}", self.start_new),
            ("POST", "orchestrators/{name}/{instance_id}", self.start_new),
            ("GET", "instances", self.query),
            ("GET", "instances/", self.query),
            ("DELETE", "instances", self.purge_by),
            ("DELETE", "instances/", self.purge_by),
            ("GET", "instances/{instance_id}", self.get_status),
            ("DELETE", "instances/{instance_id}", self.purge),
            ("POST", "instances/{instance_id}/raiseEvent/{event}", self.raise_event),
            ("POST", "instances/{instance_id}/terminate", self.terminate),
            ("POST", "instances/{instance_id}/suspend", self.suspend),
            ("POST", "instances/{instance_id}/resume", self.resume),
            ("POST", "instances/{instance_id}/rewind", self.rewind),
            ("POST", "instances/{instance_id}/restart", self.restart),
            ("GET", "entities", self.list_entities),
            ("GET", "entities/", self.list_entities),
            ("GET", "entities/{name}", self.list_entities),
            ("GET", "entities/{name}/{key}", self.read_entity),
            ("POST", "entities/{name}/{key}", self.signal_entity),
            ("DELETE", "entities/{name}/{key}", self.signal_entity),
        ]
        out = []
        for prefix in (self.rpc_prefix, WEBHOOK_PREFIX):
            for method, path, handler in table:
                out.append(web.route(method, prefix + path, self._guard(handler)))
        return out

    def _guard(
        self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        kind = getattr(handler, "__name__", "call")

        async def wrapped(request: web.Request) -> web.StreamResponse:
            self.calls[kind] += 1
            started = time.monotonic()
            response = await guarded(request)
            # Webhook calls are user requests; RPC calls are the worker's own traffic.
            level = logging.INFO if request.path.startswith(WEBHOOK_PREFIX) else logging.DEBUG
            self._log.log(level, "%s %s -> %d (%.0fms)", request.method,
                          loggable_url(request, hidden=(self._rpc_key,)),
                          response.status, (time.monotonic() - started) * 1000)
            return response

        async def guarded(request: web.Request) -> web.StreamResponse:
            # The webhook URLs are public like a function's; the RPC channel is reached only
            # through its keyed path (see routes()).
            if request.path.startswith(WEBHOOK_PREFIX) and not self._check_key(request):
                return problem(401, "unauthorized", "a valid function key is required (code= or "
                               "x-functions-key)")
            try:
                return await handler(request)
            except EntityIdError as exc:
                return problem(400, "bad_entity_id", str(exc))
            except (ValueError, json.JSONDecodeError) as exc:
                return problem(400, "bad_request", str(exc))
        return wrapped

    # -- helpers ---------------------------------------------------------------------

    async def _body_value(self, request: web.Request) -> Any:
        """The JSON value posted; the SDK client JSON-encodes its already encoded payloads."""
        text = await request.text()
        if not text.strip():
            return None
        value = json.loads(text)
        if request.path.startswith(RPC_PREFIX) and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ValueError(f"request body is not the JSON text of a value: {exc}") from exc
        return value

    def _no_engine(self) -> web.Response:
        return problem(501, "orchestrations_unavailable",
                       f"the orchestration engine is not available: {self._engine_error}")

    async def _existing(self, instance_id: str) -> dict[str, Any] | None:
        assert self._engine is not None
        return await self._engine.get_status(
            instance_id, show_history=False, show_history_output=False, show_input=False
        )

    # -- orchestrations ----------------------------------------------------------------

    async def start_new(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        name = request.match_info["name"]
        instance_id = request.match_info.get("instance_id")
        value = await self._body_value(request)
        try:
            new_id = await self._engine.start_new(name, instance_id, value)
        except KeyError:
            # The SDK reads ExceptionMessage from a 400 answer.
            return web.json_response(
                {"Message": "One or more of the arguments submitted is incorrect",
                 "ExceptionMessage": f"The function '{name}' doesn't exist, is disabled, or is not "
                                     "an orchestrator function."},
                status=400,
            )
        except ValueError as exc:
            # The extension lets the backend's OrchestrationAlreadyExistsException through to its
            # catch-all (HttpApiHandler.HandleRequestAsync): a 500 in Web API's error shape, whose
            # ExceptionMessage the SDK raises.
            return web.json_response(
                {"Message": "Something went wrong while processing your request",
                 "ExceptionMessage": str(exc),
                 "ExceptionType": "DurableTask.Core.Exceptions.OrchestrationAlreadyExistsException"},
                status=500,
            )
        self._log.info("orchestration %s started instance=%s", name, new_id)
        timeout = request.query.get("timeout")
        if timeout:  # createAndWaitOnNewInstancePostUri: answer with the output if it is quick
            interval = float(request.query.get("pollingInterval") or 1)
            finished = await self._wait_finished(new_id, float(timeout), max(0.05, interval))
            if finished is not None:
                if finished.get("runtimeStatus") == RuntimeStatus.COMPLETED:
                    return web.json_response(finished.get("output"), status=200)
                # Failed, terminated, canceled: the status, 200 (500 for Failed when asked).
                failed = finished.get("runtimeStatus") == RuntimeStatus.FAILED
                code = 500 if failed and _flag(request, "returnInternalServerErrorOnFailure") else 200
                return web.json_response(_wire_status(finished), status=code)
        return self._check_status(new_id)

    def _check_status(self, instance_id: str) -> web.Response:
        """The extension's check-status answer: 202, the management URLs, Location, Retry-After."""
        urls = self._management_urls(instance_id)
        payload = {key: urls[key] for key in _CHECK_STATUS_KEYS}
        return web.json_response(payload, status=202, headers={
            "Location": payload["statusQueryGetUri"], "Retry-After": _CHECK_STATUS_RETRY_AFTER})

    async def _wait_finished(self, instance_id: str, timeout: float,
                             interval: float) -> dict[str, Any] | None:
        """The status once the instance has finished, or None when it has not within ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            status = await self._existing(instance_id)
            if status is not None and status.get("runtimeStatus") in _TERMINAL:
                return status
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            await asyncio.sleep(min(interval, remaining))

    async def get_status(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        instance_id = request.match_info["instance_id"]
        status = await self._engine.get_status(
            instance_id,
            show_history=_flag(request, "showHistory"),
            show_history_output=_flag(request, "showHistoryOutput"),
            show_input=_flag(request, "showInput", default=True),
        )
        if status is None:
            return web.Response(status=404)
        runtime = status.get("runtimeStatus")
        headers = {}
        if runtime in _RUNNING_CODES:
            code = 202
            headers = {"Location": str(request.url), "Retry-After": _STATUS_RETRY_AFTER}
        elif runtime == RuntimeStatus.FAILED:
            # 200 with the status, as the extension answers; 500 only when the caller asks.
            code = 500 if _flag(request, "returnInternalServerErrorOnFailure") else 200
        else:
            code = 200
        return web.json_response(_wire_status(status), status=code, headers=headers)

    async def query(self, request: web.Request) -> web.StreamResponse:
        """The instance query, paged as the extension pages it (HttpApiHandler
        HandleGetStatusRequestAsync): ``top`` is the page size, 100 when absent
        (OrchestrationStatusQueryCondition.PageSize), the next page's token in the
        x-ms-continuation-token header both ways; a caller that ignores the token (the Python SDK's
        get_status_all / get_status_by) sees only the first page. Instances come in instance id
        order, as the Azure Storage Instances table (partition key = instance id) answers them;
        the token resumes after the last id handed out, so purging while paging skips nothing."""
        if self._engine is None:
            return self._no_engine()
        top = request.query.get("top", "")
        size = min(int(top), _MAX_PAGE) if top.isdigit() and int(top) > 0 else _DEFAULT_PAGE
        after = _instance_token(request.headers.get(CONTINUATION_HEADER))
        statuses = sorted(await self._filtered(request), key=lambda s: str(s["instanceId"]))
        if after is not None:
            statuses = [s for s in statuses if str(s["instanceId"]) > after]
        page = [_wire_status(s) for s in statuses[:size]]
        if not _flag(request, "showInput", default=True):
            # OrchestrationStatusQueryCondition.ShowInput: the input is not fetched, so null.
            page = [{**s, "input": None} for s in page]
        token = _encode_token([str(page[-1]["instanceId"])]) if len(statuses) > size else ""
        return web.json_response(page, headers={CONTINUATION_HEADER: token})

    async def _filtered(self, request: web.Request) -> list[dict[str, Any]]:
        assert self._engine is not None
        runtime = request.query.get("runtimeStatus")
        return await self._engine.query(
            runtime_status=[s for s in runtime.split(",") if s] if runtime else None,
            created_from=_date(request, "createdTimeFrom"),
            created_to=_date(request, "createdTimeTo"),
            instance_id_prefix=request.query.get("instanceIdPrefix") or None,
        )

    async def purge(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        instance_id = request.match_info["instance_id"]
        status = await self._existing(instance_id)
        if status is not None and status.get("runtimeStatus") not in _TERMINAL:
            # Only a finished instance's history may go: purging a running one would orphan its
            # queued work (docs/devhost.md "Durable HTTP API").
            return problem(412, "instance_running", f"instance {instance_id!r} is "
                           f"{status.get('runtimeStatus')}; terminate it before purging its history")
        if await self._engine.purge(instance_id):
            return web.json_response({"instancesDeleted": 1})
        return web.json_response({"instancesDeleted": 0}, status=404)

    async def purge_by(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        deleted = 0
        for status in await self._filtered(request):
            if await self._engine.purge(status["instanceId"]):
                deleted += 1
        return web.json_response({"instancesDeleted": deleted}, status=200 if deleted else 404)

    async def raise_event(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        instance_id = request.match_info["instance_id"]
        event = request.match_info["event"]
        value = await self._body_value(request)
        refused = await self._refuse_finished(instance_id)
        if refused is not None:
            return refused
        if not await self._engine.raise_event(instance_id, event, value):
            return problem(404, "instance_not_found", f"no instance with id {instance_id!r}")
        self._log.info("orchestration event %s instance=%s", event, instance_id)
        return web.Response(status=202)

    async def _refuse_finished(self, instance_id: str) -> web.StreamResponse | None:
        """The problem (404 unknown, 410 finished) when ``instance_id`` can take no more events."""
        status = await self._existing(instance_id)
        if status is None:
            return problem(404, "instance_not_found", f"no instance with id {instance_id!r}")
        if status.get("runtimeStatus") in _TERMINAL:
            return problem(410, "instance_gone", f"instance {instance_id!r} is "
                           f"{status.get('runtimeStatus')}")
        return None

    async def _control(
        self, request: web.Request, verb: str, action: Callable[[str, str], Awaitable[bool]]
    ) -> web.StreamResponse:
        instance_id = request.match_info["instance_id"]
        reason = request.query.get("reason", "")
        refused = await self._refuse_finished(instance_id)
        if refused is not None:
            return refused
        if not await action(instance_id, reason):
            return problem(404, "instance_not_found", f"no instance with id {instance_id!r}")
        self._log.info("orchestration %s instance=%s reason=%s", verb, instance_id, reason)
        return web.Response(status=202)

    async def terminate(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        return await self._control(request, "terminate", self._engine.terminate)

    async def suspend(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        return await self._control(request, "suspend", self._engine.suspend)

    async def resume(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        return await self._control(request, "resume", self._engine.resume)

    async def rewind(self, request: web.Request) -> web.StreamResponse:
        return problem(501, "rewind_not_supported", "the local host does not emulate rewind")

    async def restart(self, request: web.Request) -> web.StreamResponse:
        if self._engine is None:
            return self._no_engine()
        instance_id = request.match_info["instance_id"]
        status = await self._engine.get_status(
            instance_id, show_history=False, show_history_output=False, show_input=True
        )
        if status is None:
            return problem(404, "instance_not_found", f"no instance with id {instance_id!r}")
        new_id = None if _flag(request, "restartWithNewInstanceId", default=True) else instance_id
        if new_id is not None and status.get("runtimeStatus") not in _TERMINAL:
            await self._engine.terminate(new_id, "restarted")
        started = await self._engine.start_new(str(status["name"]), new_id, status.get("input"))
        # As the extension: the check-status answer for the new instance (the SDK's
        # client.restart() reads the id from it).
        return self._check_status(started)

    # -- entities --------------------------------------------------------------------------

    async def signal_entity(self, request: web.Request) -> web.StreamResponse:
        """Signal an entity, as the extension: DELETE signals ``delete``; a JSON body is the input,
        any other body the input as a string; an entity the app does not define is a 400."""
        name = request.match_info["name"]
        key = request.match_info["key"]
        operation = "delete" if request.method == "DELETE" else request.query.get("op")
        if not operation:
            return problem(400, "missing_operation", "the op query parameter names the operation")
        if not self._entities.has_entity(name):
            # The SDK reads ExceptionMessage from a 400 answer (as for an unknown orchestrator).
            return web.json_response(
                {"Message": "One or more of the arguments submitted is incorrect",
                 "ExceptionMessage": f"The function '{name}' doesn't exist, is disabled, or is not "
                                     "an entity function."},
                status=400,
            )
        text = await request.text()
        input_text: str | None = None
        if text.strip() and request.content_type == "application/json":
            value = json.loads(text)  # reject what is not JSON before it is queued
            # The SDK's client posts the JSON text of the input's JSON text (the wire form);
            # a webhook caller posts the input itself.
            from_sdk = request.path.startswith(RPC_PREFIX) and isinstance(value, str)
            input_text = text if from_sdk else encode_input(value)
        elif text:
            input_text = encode_input(text)  # a text/plain (or other) body is a string input
        scheduled = _date(request, "scheduledTime")
        await self._entities.signal_raw(
            make_entity_id(name, key), operation, input_text, scheduled_time=scheduled,
        )
        return web.Response(status=202)

    async def read_entity(self, request: web.Request) -> web.StreamResponse:
        entity_id = make_entity_id(request.match_info["name"], request.match_info["key"])
        exists, state = await self._entities.read_state(entity_id)
        if not exists or state is None:
            return web.Response(status=404)
        return web.Response(status=200, text=state, content_type="application/json")

    async def list_entities(self, request: web.Request) -> web.StreamResponse:
        # The extension's entity query: `top` is the page size, the next page's opaque
        # continuation token travels in the x-ms-continuation-token header both ways.
        name = request.match_info.get("name") or None
        top = _page_size(request)
        after = _entity_token(request.headers.get(CONTINUATION_HEADER))
        items = await self._entities.list_entities(
            name, fetch_state=_flag(request, "fetchState"), limit=top + 1, after=after,
            operated_from=_date(request, "lastOperationTimeFrom"),
            operated_to=_date(request, "lastOperationTimeTo"),
        )
        headers = {}
        if len(items) > top:
            items = items[:top]
            last = items[-1]["entityId"]
            headers[CONTINUATION_HEADER] = _encode_token([last["name"], last["key"]])
        return web.json_response(items, headers=headers)


def management_urls(base: str, task_hub: str, connection: str, key: str | None,
                    instance_id: str) -> dict[str, str]:
    """The ``create_check_status_response`` URL set, filled in for ``instance_id``."""
    qs = f"taskHub={quote(task_hub)}&connection={quote(connection)}"
    if key:
        qs += f"&code={quote(key)}"
    inst = f"{base}instances/{quote(instance_id, safe='')}"
    return {
        "id": instance_id,
        "purgeHistoryDeleteUri": f"{inst}?{qs}",
        "restartPostUri": f"{inst}/restart?{qs}",
        "resumePostUri": f"{inst}/resume?reason={{text}}&{qs}",
        "sendEventPostUri": f"{inst}/raiseEvent/{{eventName}}?{qs}",
        "statusQueryGetUri": f"{inst}?{qs}",
        "suspendPostUri": f"{inst}/suspend?reason={{text}}&{qs}",
        "terminatePostUri": f"{inst}/terminate?reason={{text}}&{qs}",
        "rewindPostUri": f"{inst}/rewind?reason={{text}}&{qs}",
    }
