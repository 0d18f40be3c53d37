"""The memory store on Azure Table Storage: the app's own storage account (`AzureWebJobsStorage`),
shared by every instance and worker process (docs/agents.md "Long-term memory").

One partition per namespace (PartitionKey `<user id>|<agent or empty>`, RowKey the item's id), so
every request names one partition and no query can reach another user's rows. Namespace parts and
ids keep to `A-Z a-z 0-9 . _ ~ -`, which holds none of the characters Table keys forbid (`/ \\ # ?`,
control characters), and `|` is outside that set, so two namespaces never share a PartitionKey.

A namespace's item count lives in a row of its partition (RowKey `!count`, which no item id can
be): a new item is created in one entity group transaction with the count's update, conditional
on the count's ETag, so two puts racing to `max_items` cannot both pass (the loser reads the new
count and tries again). The Table service runs a transaction on one partition atomically
(https://learn.microsoft.com/rest/api/storageservices/performing-entity-group-transactions).

Property limits (https://learn.microsoft.com/rest/api/storageservices/understanding-the-table-service-data-model):
64 KiB a string or binary property, 1 MiB and 252 properties an entity. An embedding is kept as
little-endian float64s (as the SQLite store keeps it) in binary properties of 32 KiB each, so the
8,192 dimensions `MAX_EMBEDDING_DIMENSIONS` allows take two; text (4,000 characters, 8 KB as the
service's UTF-16) and metadata (4 KiB) leave an entity far under 1 MiB.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from azure.core import MatchConditions
from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode
from azure.data.tables.aio import TableClient

from .._clock import now_iso
from .._per_loop import PerLoop
from .._storage import StorageConnection
from ._store import (
    DEFAULT_MAX_ITEMS,
    Candidate,
    InvalidMemory,
    MemoryCursor,
    MemoryFull,
    MemoryHit,
    MemoryItem,
    MemoryNamespace,
    MemoryPage,
    MemoryStoreError,
    checked_embedding,
    checked_limit,
    checked_listing,
    checked_part,
    checked_text,
    matches,
    metadata_json,
    pack_embedding,
    rank,
    unpack_embedding,
)

COUNT_ROW = "!count"
"""RowKey of a partition's item count ('!' is never in an item id)."""
EMBEDDING_CHUNK_BYTES = 32 * 1024
"""Bytes of embedding per binary property (the service takes at most 64 KiB a property)."""
EMBEDDING_PROPERTIES = 2
"""Binary properties an embedding may take: 8,192 float64 dimensions."""
WRITE_ATTEMPTS = 20
"""Conditional writes a put or delete tries before giving up (each conflict is another writer's
success, so this is only reached under sustained contention on one user's memory)."""

_EMBEDDING = [f"Embedding{n}" for n in range(EMBEDDING_PROPERTIES)]
_FIELDS = ["RowKey", "Text", "Metadata", "SourceSession", "CreatedAt", "UpdatedAt", "Dimensions"]


def partition_key(namespace: MemoryNamespace) -> str:
    """The namespace's partition: user and agent ("" for the user's shared memory)."""
    return f"{namespace.user_id}|{namespace.agent or ''}"


def _embedding_properties(vector: tuple[float, ...] | None) -> dict[str, Any]:
    blob = pack_embedding(vector)
    if blob is None:
        return {"Dimensions": 0}
    chunks = [blob[i : i + EMBEDDING_CHUNK_BYTES] for i in range(0, len(blob), EMBEDDING_CHUNK_BYTES)]
    if len(chunks) > EMBEDDING_PROPERTIES:  # MAX_EMBEDDING_DIMENSIONS keeps this from happening
        raise InvalidMemory(
            f"an embedding must fit in {EMBEDDING_PROPERTIES} table properties "
            f"of {EMBEDDING_CHUNK_BYTES} bytes"
        )
    return {"Dimensions": len(vector or ()), **dict(zip(_EMBEDDING, chunks, strict=False))}


def _vector(entity: Mapping[str, Any]) -> tuple[float, ...] | None:
    if not entity.get("Dimensions"):
        return None
    return unpack_embedding(b"".join(bytes(entity[name]) for name in _EMBEDDING if entity.get(name)))


def _conflict(error: TableTransactionError) -> bool:
    """Whether a transaction lost a race: the count's ETag changed (412; only the count's update
    is conditional), or another writer created the count first (409 on the count, operation 1)."""
    return error.status_code == 412 or (error.status_code == 409 and error.index == 1)


class TableMemoryStore:
    """`MemoryStore` on an Azure Table Storage table (created on first write). `max_items`: what
    one namespace may hold."""

    def __init__(
        self, connection: StorageConnection, table: str, *, max_items: int = DEFAULT_MAX_ITEMS
    ) -> None:
        if max_items < 1:
            raise ValueError("max_items must be positive")
        self.connection = connection
        self.table = table
        self.max_items = max_items
        # aio clients belong to the event loop that made them: one per loop (the entity runs turns
        # on per-thread loops, the HTTP handlers on the worker's loop).
        self._clients: PerLoop[TableClient] = PerLoop()
        self._created = False

    def describe(self) -> str:
        return f"Azure Table Storage table {self.table!r} at {self.connection.describe()}"

    def _client(self) -> TableClient:
        return self._clients.get_or_make(lambda: self.connection.table_client(self.table))

    async def close(self) -> None:
        """Close the client of the running loop (and the identity's credential it was made with)."""
        client = self._clients.pop()
        if client is not None:
            await client.close()
            credential = client.credential
            if isinstance(credential, AsyncTokenCredential):  # not a connection string's key
                await credential.close()

    async def _ensure_table(self) -> None:
        if not self._created:
            with contextlib.suppress(ResourceExistsError):
                await self._client().create_table()
            self._created = True

    async def _entity(self, pk: str, rk: str, select: list[str] | None = None) -> Any:
        """The entity, or None (also when the table does not exist yet: nothing was written)."""
        try:
            return await self._client().get_entity(pk, rk, select=select)
        except ResourceNotFoundError:
            return None

    def _item(self, namespace: MemoryNamespace, entity: Mapping[str, Any]) -> MemoryItem:
        return MemoryItem(
            id=entity["RowKey"],
            namespace=namespace,
            text=entity["Text"],
            created_at=entity["CreatedAt"],
            updated_at=entity["UpdatedAt"],
            metadata=json.loads(entity["Metadata"]),
            source_session=entity.get("SourceSession"),
            embedding=_vector(entity),
        )

    # -- MemoryStore ----------------------------------------------------------------------

    async def put(
        self,
        namespace: MemoryNamespace,
        text: str,
        *,
        item_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_session: str | None = None,
        embedding: Sequence[float] | None = None,
        upsert: bool = False,
    ) -> MemoryItem:
        text = checked_text(text)
        meta = metadata_json(metadata)
        vector = checked_embedding(embedding)
        if source_session is not None:
            checked_part(source_session, "a memory's source session")
        if item_id is not None:
            checked_part(item_id, "a memory's id")
        pk = partition_key(namespace)
        properties = {"Text": text, "Metadata": meta, **_embedding_properties(vector)}
        if source_session is not None:
            properties["SourceSession"] = source_session
        await self._ensure_table()
        for _ in range(WRITE_ATTEMPTS):
            stamp = now_iso()
            key: str | None
            created: str | None
            if item_id is None:
                key, created = await self._create(pk, properties, stamp), stamp
            elif upsert and await self._entity(pk, item_id, ["CreatedAt"]) is None:
                # Created with this id; a writer that won meanwhile makes it a replace next time.
                key, created = await self._create(pk, properties, stamp, item_id), stamp
            else:
                key, created = item_id, await self._replace(pk, item_id, properties, stamp)
            if key is not None and created is not None:
                values = json.loads(meta)
                return MemoryItem(key, namespace, text, created, stamp, values, source_session, vector)
            await asyncio.sleep(random.uniform(0.005, 0.03))  # another writer won: read again
        raise MemoryStoreError("this memory is being written by too many callers at once; try again")

    async def _replace(self, pk: str, item_id: str, properties: dict[str, Any], stamp: str) -> str | None:
        """Replace the item, keeping its creation time (returned); None when it changed meanwhile."""
        old = await self._entity(pk, item_id, ["CreatedAt"])
        if old is None:
            raise InvalidMemory(f"there is no memory {item_id!r} to replace")
        entity = {"PartitionKey": pk, "RowKey": item_id, **properties}
        entity.update(CreatedAt=old["CreatedAt"], UpdatedAt=stamp)
        try:
            await self._client().update_entity(
                entity, mode=UpdateMode.REPLACE, etag=old.metadata["etag"],
                match_condition=MatchConditions.IfNotModified,
            )  # fmt: skip
        except ResourceNotFoundError:
            raise InvalidMemory(f"there is no memory {item_id!r} to replace") from None
        except ResourceModifiedError:
            return None  # replaced meanwhile: read its creation time again
        return str(old["CreatedAt"])

    async def _create(
        self, pk: str, properties: dict[str, Any], stamp: str, item_id: str | None = None
    ) -> str | None:
        """A new item and the count's update in one transaction: its id, or None when the count
        changed meanwhile. `MemoryFull` when the namespace is full."""
        counter = await self._entity(pk, COUNT_ROW)
        count = int(counter["Count"]) if counter is not None else 0
        if count >= self.max_items:
            raise MemoryFull(f"this memory holds {count} items, its limit; forget some first")
        item_id = item_id or uuid.uuid4().hex
        entity = {"PartitionKey": pk, "RowKey": item_id, **properties, "CreatedAt": stamp, "UpdatedAt": stamp}
        tally = {"PartitionKey": pk, "RowKey": COUNT_ROW, "Count": count + 1}
        if counter is None:
            count_op: tuple[Any, ...] = ("create", tally)
        else:
            count_op = ("update", tally, {
                "mode": UpdateMode.REPLACE, "etag": counter.metadata["etag"],
                "match_condition": MatchConditions.IfNotModified,
            })  # fmt: skip
        try:
            await self._client().submit_transaction([("create", entity), count_op])
        except TableTransactionError as error:
            if _conflict(error):
                return None
            raise
        return item_id

    async def get(self, namespace: MemoryNamespace, item_id: str) -> MemoryItem | None:
        try:
            checked_part(item_id, "a memory's id")
        except InvalidMemory:
            return None  # no item has such an id (and the count's row is never an item)
        entity = await self._entity(partition_key(namespace), item_id)
        return None if entity is None else self._item(namespace, entity)

    async def _rows(self, pk: str, select: list[str]) -> list[Any]:
        query = self._client().query_entities("PartitionKey eq @pk", parameters={"pk": pk}, select=select)
        try:
            return [row async for row in query if row["RowKey"] != COUNT_ROW]
        except ResourceNotFoundError:
            return []  # no table yet: nothing was ever remembered

    async def search(
        self,
        namespace: MemoryNamespace,
        query: str = "",
        *,
        embedding: Sequence[float] | None = None,
        limit: int = 10,
    ) -> list[MemoryHit]:
        limit = checked_limit(limit)
        vector = checked_embedding(embedding)
        pk = partition_key(namespace)
        # One query of the partition: embeddings only when the search compares them.
        rows = {row["RowKey"]: row for row in await self._rows(pk, _FIELDS + (_EMBEDDING if vector else []))}
        candidates = [
            Candidate(key, row["Text"], row["UpdatedAt"], _vector(row) if vector else None)
            for key, row in rows.items()
        ]
        ranked = rank(candidates, query, vector, limit)
        if vector is None:
            # The hits' embeddings, read for the hits alone (a keyword search of a namespace of
            # embedded items would otherwise read every vector).
            embedded = [key for key, _ in ranked if rows[key].get("Dimensions")]
            reads = (self._entity(pk, key, ["RowKey", *_EMBEDDING]) for key in embedded)
            vectors = await asyncio.gather(*reads)
            for key, found in zip(embedded, vectors, strict=True):
                if found is None:
                    rows.pop(key)  # deleted meanwhile
                else:
                    rows[key].update({name: found.get(name) for name in _EMBEDDING})
        return [MemoryHit(self._item(namespace, rows[key]), score) for key, score in ranked if key in rows]

    async def delete(self, namespace: MemoryNamespace, item_id: str) -> bool:
        try:
            checked_part(item_id, "a memory's id")
        except InvalidMemory:
            return False
        pk = partition_key(namespace)
        for _ in range(WRITE_ATTEMPTS):
            counter = await self._entity(pk, COUNT_ROW)
            if counter is None:
                return False  # nothing was ever stored here
            tally = {"PartitionKey": pk, "RowKey": COUNT_ROW, "Count": max(int(counter["Count"]) - 1, 0)}
            try:
                await self._client().submit_transaction([
                    ("delete", {"PartitionKey": pk, "RowKey": item_id}),
                    ("update", tally, {
                        "mode": UpdateMode.REPLACE, "etag": counter.metadata["etag"],
                        "match_condition": MatchConditions.IfNotModified,
                    }),
                ])  # fmt: skip
            except TableTransactionError as error:
                if error.status_code == 404 and error.index == 0:
                    return False
                if _conflict(error):
                    await asyncio.sleep(random.uniform(0.005, 0.03))
                    continue
                raise
            return True
        raise MemoryStoreError("this memory is being written by too many callers at once; try again")

    # -- a user's items across their namespaces -------------------------------------------

    async def _user_rows(self, user_id: str, item_id: str | None = None) -> list[MemoryItem]:
        """The user's items (without embeddings) in every partition of theirs: the partition keys
        from `user|` up to `user}` ('}' follows '|', and neither is in a user id)."""
        where = "PartitionKey ge @low and PartitionKey lt @high"
        parameters = {"low": f"{user_id}|", "high": f"{user_id}}}"}
        if item_id is not None:
            where += " and RowKey eq @id"
            parameters["id"] = item_id
        query = self._client().query_entities(where, parameters=parameters, select=["PartitionKey", *_FIELDS])
        try:
            rows = [row async for row in query if row["RowKey"] != COUNT_ROW]
        except ResourceNotFoundError:
            return []  # no table yet
        items = []
        for row in rows:
            agent = str(row["PartitionKey"]).partition("|")[2] or None
            items.append(self._item(MemoryNamespace(user_id, agent), {**row, "Dimensions": 0}))
        return items

    async def list_user(
        self, user_id: str, query: str = "", *, limit: int = 20, after: MemoryCursor | None = None
    ) -> MemoryPage:
        # The user's partitions are read whole (each at most max_items rows) and paged in memory,
        # in the order the SQLite store pages in: (created_at, agent, id), newest first.
        checked_part(user_id, "a user id")
        wanted, limit = checked_listing(query, limit)

        def key(item: MemoryItem) -> tuple[str, str, str]:
            return (item.created_at, item.namespace.agent or "", item.id)

        items = sorted(
            (i for i in await self._user_rows(user_id) if matches(wanted, i)), key=key, reverse=True
        )
        if after is not None:
            bound = (after.created_at, after.agent, after.item_id)
            items = [i for i in items if key(i) < bound]
        if len(items) > limit:
            return MemoryPage(items[:limit], MemoryCursor.after(items[limit - 1]))
        return MemoryPage(items, None)

    async def find(self, user_id: str, item_id: str) -> MemoryItem | None:
        checked_part(user_id, "a user id")
        checked_part(item_id, "a memory's id")
        found = sorted(await self._user_rows(user_id, item_id), key=lambda i: i.namespace.agent or "")
        return found[0] if found else None
