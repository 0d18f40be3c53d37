"""hosting's own calls to the Durable extension's HTTP API at the binding's `rpcBaseUrl`.

hosting reads a session's state (`GET entities/{name}/{key}`, the endpoint the SDK's
`read_entity_state` calls) and queries entities and instances over this API itself: the state
arrives as JSON text, which `state` parses strictly once, instead of the SDK's lenient parse
followed by a second serialisation to refuse what it let through (NaN, Infinity). That text is not
the stored bytes: the extension reads the state into a JSON token and writes the token out again
as its answer (`HttpApiHandler.HandleGetEntityRequestAsync`: `ReadEntityStateAsync<JToken>`, then
`CreateResponse`), so whitespace, escapes and the spelling of numbers are its serialiser's. Nothing
is measured on it: a session's size is the text the entity writes for the parsed document
(`state.check_state`, `state.compact_json`), whichever text carried it.
The SDK's other calls (signals, orchestrations) keep using its own client.

Connections are pooled, one aiohttp session per event loop (a session belongs to the loop that
opened it: the runtime runs HTTP functions on its loop, hosting's turns on another). A loop's
session closes as the loop shuts down: a task waits on it for that, and `asyncio.run` and test
runners cancel the tasks left when they close their loop (a worker's loop lasts as long as its
process).
"""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import aiohttp
import azure.durable_functions as df

from agents import PerLoop

TIMEOUT_SECONDS = 30.0
"""The longest one call may take, its body included."""

# The session of each loop, and the task that closes it with the loop (held here: the loop
# itself keeps only weak references to its tasks).
_sessions: PerLoop[tuple[aiohttp.ClientSession, asyncio.Task[None]]] = PerLoop()


def _open() -> tuple[aiohttp.ClientSession, asyncio.Task[None]]:
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS))
    return session, asyncio.get_running_loop().create_task(_close_with_loop(session))


def rpc_session() -> aiohttp.ClientSession:
    """The pooled session of the running event loop (opened on first use)."""
    return _sessions.get_or_make(_open, usable=lambda found: not found[0].closed)[0]


async def _close_with_loop(session: aiohttp.ClientSession) -> None:
    try:
        await asyncio.Event().wait()  # until the loop's shutdown cancels this task
    except asyncio.CancelledError:
        await session.close()
        raise
    # A loop closed without cancelling its tasks drops this one unfinished: nothing can be
    # awaited then (its sockets went with the loop).


async def read_entity_text(base_url: str, entity_id: df.EntityId) -> bytes | None:
    """The entity's state as the extension serialises it again (JSON text, not the stored bytes),
    None when it does not exist.

    Raises aiohttp's errors: `ClientResponseError` for any answer but 200 and 404."""
    url = f"{base_url}entities/{quote(entity_id.name, safe='')}/{quote(entity_id.key, safe='')}"
    async with rpc_session().get(url) as response:
        if response.status == 404:
            return None
        if response.status != 200:
            raise aiohttp.ClientResponseError(
                response.request_info, (), status=response.status,
                message=f"reading entity {entity_id.name}@{entity_id.key} failed",
            )
        return await response.read()
