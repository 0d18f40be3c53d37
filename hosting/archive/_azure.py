"""Archived history in Azure Blob Storage (`azure-storage-blob`, aio), e.g. the app's own
storage account (`AzureWebJobsStorage`) or Azurite locally.

A connection is named the way Functions names connections: a setting holding a connection
string (`AzureWebJobsStorage=DefaultEndpointsProtocol=...` or `UseDevelopmentStorage=true`), or
identity-based settings under the same prefix (`AzureWebJobsStorage__blobServiceUri` or
`AzureWebJobsStorage__accountName`, with `__credential=managedidentity` and `__clientId` for a
user-assigned identity), used with `DefaultAzureCredential`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError

if TYPE_CHECKING:
    from azure.storage.blob.aio import ContainerClient

from agents import PerLoop

from .._errors import HostingConfigurationError


@dataclass(frozen=True)
class BlobConnection:
    """How to reach a storage account: a connection string, or an account URL with an identity."""

    connection_string: str | None = None
    account_url: str | None = None
    client_id: str | None = None

    @classmethod
    def from_settings(cls, name: str, environ: Mapping[str, str] | None = None) -> BlobConnection:
        """The connection named `name` (e.g. `AzureWebJobsStorage`) in the app settings."""
        env = os.environ if environ is None else environ
        value = env.get(name, "").strip()
        if value:
            return cls(connection_string=value)
        service_uri = env.get(f"{name}__blobServiceUri", "").strip()
        account = env.get(f"{name}__accountName", "").strip()
        if not service_uri and account:
            service_uri = f"https://{account}.blob.core.windows.net"
        if not service_uri:
            raise HostingConfigurationError(
                f"history store 'azure': no connection {name!r} (set {name} to a connection string, or "
                f"{name}__blobServiceUri / {name}__accountName for an identity-based connection)"
            )
        client_id = env.get(f"{name}__clientId", "").strip() or None
        return cls(account_url=service_uri, client_id=client_id)

    @property
    def configured(self) -> bool:
        """Whether there is anything to connect with."""
        return bool(self.connection_string or self.account_url)


class AzureBlobChunkStore:
    """Chunks as block blobs in one container (created on first write)."""

    def __init__(self, connection: BlobConnection, container: str) -> None:
        self.connection = connection
        self.container = container
        # aio clients belong to the event loop that made them: one per loop (the entity runs
        # turns on per-thread loops, the HTTP handlers on the worker's loop).
        self._clients: PerLoop[ContainerClient] = PerLoop()
        self._created = False

    def describe(self) -> str:
        where = self.connection.account_url or "the connection string's account"
        return f"Azure Blob Storage container {self.container!r} at {where}"

    def _client(self) -> ContainerClient:
        return self._clients.get_or_make(self._open)

    def _open(self) -> ContainerClient:
        # Imported on first use: the Blob SDK is a tenth of a second of every worker's start,
        # and an app that archives nothing never needs it.
        from azure.storage.blob.aio import ContainerClient

        if self.connection.connection_string:
            return ContainerClient.from_connection_string(self.connection.connection_string, self.container)
        from azure.identity.aio import DefaultAzureCredential

        credential: Any = DefaultAzureCredential(managed_identity_client_id=self.connection.client_id)
        return ContainerClient(str(self.connection.account_url), self.container, credential=credential)

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
