"""What the erasure tests read of every store a user's data lives in, straight from the files of
a local host's data directory: the entity store (devhost's SQLite), the archive's files, the
stream store's SQLite tables and the memory store's SQLite file. Also the turns that make a
user's data, behind App Service Authentication (the principal header, as the platform sends it)."""

from __future__ import annotations

import json
import pathlib
import sqlite3
import uuid
from typing import Any

from e2e_support import Client, HostProcess, eventually

from agents.testing import ModelServer, Reply
from hosting.archive import FileChunkStore, session_prefix

PRINCIPAL = "X-MS-CLIENT-PRINCIPAL-ID"


def erasure_env(data_dir: pathlib.Path) -> dict[str, str]:
    """Easy Auth on, history archived above 4 KiB into files, memory in the data directory."""
    return {
        "WEBSITE_AUTH_ENABLED": "True",
        "DURABLE_AGENTS_ARCHIVE_AT_BYTES": "4096",
        "DURABLE_AGENTS_ARCHIVE_KEEP_BYTES": "1024",
        "DURABLE_AGENTS_HISTORY_STORE": "files",
        "DURABLE_AGENTS_MEMORY_PATH": str(data_dir / "memory.db"),
    }


async def turn(client: Client, user: str, agent: str, message: str, session: str | None = None) -> str:
    """One turn of `user`'s, streamed (so its events go to the stream store); its session id."""
    body: dict[str, Any] = {"message": message, **({"session_id": session} if session else {})}
    answer = await client.post(f"/api/agents/{agent}/run", json_body=body, headers={PRINCIPAL: user})
    assert answer.status == 200, answer.body[:500]
    return str(answer.json()["session_id"])


async def remember(client: Client, model: ModelServer, user: str, *facts: str) -> str:
    model.script(Reply.tool_calls([("remember", {"fact": f}) for f in facts]), Reply.text("Noted."))
    return await turn(client, user, "concierge", "Please remember this.")


async def long_session(client: Client, model: ModelServer, user: str) -> str:
    """Four turns of about 3 KiB: the older entries get archived."""
    session = "long-" + uuid.uuid4().hex[:10]
    model.script(*(Reply.text(f"answer {n} " + "z" * 1500) for n in range(4)))
    for n in range(4):
        await turn(client, user, "assistant", f"turn {n} " + "y" * 1500, session)
    return session


def _rows(db: pathlib.Path, query: str, *args: Any) -> list[tuple[Any, ...]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as connection:
        return connection.execute(query, args).fetchall()


def stored_sessions(host: HostProcess, user: str) -> list[tuple[str, str]]:
    """(entity name, key) of every entity whose stored state names `user` (a tombstone too)."""
    query = "SELECT name, key, state FROM entity_states WHERE state IS NOT NULL"
    rows = _rows(host.data_dir / "devhost.db", query)
    return [(name, key) for name, key, state in rows if json.dumps(user) in state]


def session_rows(host: HostProcess, agent: str, session: str) -> list[tuple[Any, ...]]:
    """The entity store's rows of one session, whatever their state (a `null` one too)."""
    query = "SELECT state FROM entity_states WHERE name = ? AND key = ?"
    return _rows(host.data_dir / "devhost.db", query, f"dafx-{agent}", session)


async def archived_files(host: HostProcess, sessions: list[tuple[str, str]]) -> int:
    """How many files the archive holds of these sessions ((agent, session id)), read by the file
    store's own listing (every layout it reads)."""
    store = FileChunkStore(host.data_dir / "history")
    return sum([len(await store.list_paths(session_prefix(f"dafx-{a}", s))) for a, s in sessions])


def stream_rows(host: HostProcess, sessions: list[tuple[str, str]]) -> dict[str, int]:
    """Rows of each table of the stream store whose key is one of these sessions' runs."""
    db = host.data_dir / "streams.db"
    counts: dict[str, int] = {}
    for table in ("events", "streams", "claims"):
        counts[table] = sum(
            _rows(db, f"SELECT count(*) FROM {table} WHERE key LIKE ?", f"{agent}:{session}:%")[0][0]
            for agent, session in sessions
        )
    return counts


def memory_rows(host: HostProcess, user: str) -> int:
    """Rows of the memory store's file that name `user` anywhere."""
    db = host.data_dir / "memory.db"
    tables = [r[0] for r in _rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    found = 0
    for table in tables:
        for row in _rows(db, f"SELECT * FROM {table}"):
            found += any(isinstance(v, str) and user in v for v in row)
    return found


async def erase(client: Client, user: str) -> str:
    """DELETE users/{user} as the user; the receipt's URL."""
    answer = await client.request("DELETE", f"/api/users/{user}", headers={PRINCIPAL: user})
    assert answer.status == 202, answer.body[:500]
    assert answer.json()["status"] == "running" and answer.json()["user_id"] == user
    return str(answer.headers["location"])


async def receipt(client: Client, location: str, user: str, timeout: float = 60.0) -> dict[str, Any]:
    """The erasure's receipt once finished."""
    path = location[location.index("/api/"):]

    async def finished() -> dict[str, Any] | None:
        answer = await client.get(path, headers={PRINCIPAL: user})
        assert answer.status == 200, answer.body[:500]
        body: dict[str, Any] = answer.json()
        return body if body["status"] != "running" else None

    done: dict[str, Any] = await eventually(finished, "the erasure finishing", timeout=timeout, interval=0.1)
    return done
