"""Archived history in Azure Blob Storage (`azure-storage-blob`, aio), e.g. the app's own
storage account (`AzureWebJobsStorage`) or Azurite locally.

The connection is an `agents.StorageConnection` of the Blob service, named the way Functions
names connections (a connection string, or identity-based settings under the same prefix).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError

if TYPE_CHECKING:
    from azure.storage.blob.aio import ContainerClient

from agents import PerLoop, StorageConnection


class AzureBlobChunkStore:
    """Chunks as block blobs in one container (created on first write)."""

    def __init__(self, connection: StorageConnection, container: str) -> None:
        self.connection = connection
        self.container = container
        # aio clients belong to the event loop that made them: one per loop (the entity runs
        # turns on per-thread loops, the HTTP handlers on the worker's loop).
        self._clients: PerLoop[ContainerClient] = PerLoop()
        self._created = False

    def describe(self) -> str:
        return f"Azure Blob Storage container {self.container!r} at {self.connection.describe()}"

    def _client(self) -> ContainerClient:
        return self._clients.get_or_make(self._open)

    def _open(self) -> ContainerClient:
        # Imported on first use: the Blob SDK is a tenth of a second of every worker's start,
        # and an app that archives nothing never needs it.
        from azure.storage.blob.aio import ContainerClient

        if self.connection.connection_string:
            return ContainerClient.from_connection_string(self.connection.connection_string, self.container)
        credential = self.connection.credential()
        return ContainerClient(str(self.connection.endpoint), self.container, credential=credential)

    async def put(self, path: str, data: bytes) -> None:
        client = self._client()
        try:
            await client.upload_blob(path, data, overwrite=True)
        except ResourceNotFoundError:
            if self._created:
                raise
            with contextlib.suppress(ResourceExistsError):
                await client.create_container()
            self._created = True
            await client.upload_blob(path, data, overwrite=True)

    async def get(self, path: str) -> bytes | None:
        try:
            stream = await self._client().download_blob(path)
            return bytes(await stream.readall())
        except ResourceNotFoundError:
            return None

    async def delete(self, path: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            await self._client().delete_blob(path)

    async def list_paths(self, prefix: str) -> list[str]:
        try:
            return sorted([b.name async for b in self._client().list_blobs(name_starts_with=prefix)])
        except ResourceNotFoundError:
            return []  # no container yet: nothing was ever archived

    async def close(self) -> None:
        """Close the client of the running loop."""
        client = self._clients.pop()
        if client is not None:
            await client.close()
