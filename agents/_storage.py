"""How the app reaches a storage account's Table or Blob service (the Table memory store, the
archived history): a connection named the way Azure Functions names connections.

* `<name>` holding a connection string (`DefaultEndpointsProtocol=...`, or
  `UseDevelopmentStorage=true` for Azurite), or
* identity-based: `<name>__tableServiceUri` / `<name>__blobServiceUri` (or `<name>__accountName`,
  for `https://<account>.table.core.windows.net` / `.blob.core.windows.net`), with
  `<name>__credential=managedidentity` and `<name>__clientId` for a user-assigned managed identity
  (https://learn.microsoft.com/azure/azure-functions/functions-reference#connecting-to-host-storage-with-an-identity,
  "Common properties for identity-based connections"). With `managedidentity` the app uses
  `ManagedIdentityCredential` (that identity and nothing else); otherwise `DefaultAzureCredential`,
  which also picks the identity named by `__clientId` when it runs on Azure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from azure.data.tables.aio import TableClient

from ._errors import AgentConfigurationError

StorageService = Literal["table", "blob"]


@dataclass(frozen=True)
class StorageConnection:
    """One service of a storage account: a connection string, or a service URI with an identity."""

    service: StorageService
    connection_string: str | None = field(default=None, repr=False)  # it may hold the account key
    endpoint: str | None = None
    client_id: str | None = None
    managed_identity: bool = False

    @classmethod
    def from_settings(
        cls, name: str, service: StorageService, environ: Mapping[str, str] | None = None, *, user: str
    ) -> StorageConnection:
        """The connection named `name` (e.g. `AzureWebJobsStorage`) in the app settings; `user`
        names what needs it in the error a missing connection raises."""
        env = os.environ if environ is None else environ
        value = env.get(name, "").strip()
        if value:
            return cls(service, connection_string=value)
        uri = f"{name}__{service}ServiceUri"
        endpoint = env.get(uri, "").strip().rstrip("/")
        account = env.get(f"{name}__accountName", "").strip()
        if not endpoint and account:
            endpoint = f"https://{account}.{service}.core.windows.net"
        if not endpoint:
            raise AgentConfigurationError(
                f"{user} has no connection {name!r}: set {name} to a connection string, "
                f"or {uri} / {name}__accountName for an identity-based connection"
            )
        credential = env.get(f"{name}__credential", "").strip().lower()
        if credential not in ("", "managedidentity"):
            raise AgentConfigurationError(
                f"{name}__credential must be 'managedidentity' or unset, not {credential!r}"
            )
        return cls(
            service,
            endpoint=endpoint,
            client_id=env.get(f"{name}__clientId", "").strip() or None,
            managed_identity=credential == "managedidentity",
        )

    @staticmethod
    def is_real(name: str, service: StorageService, environ: Mapping[str, str]) -> bool:
        """Whether the connection `name` is a storage account (not absent, not Azurite's
        `UseDevelopmentStorage=true`): the store that uses it is then the default."""
        value = environ.get(name, "").strip()
        if value:
            return "usedevelopmentstorage=true" not in value.lower().replace(" ", "")
        keys = (f"{service}ServiceUri", "accountName")
        return any(environ.get(f"{name}__{key}", "").strip() for key in keys)

    def describe(self) -> str:
        return self.endpoint or "the connection string's account"

    def credential(self) -> Any:
        """The token credential of an identity-based connection (None for a connection string)."""
        if self.connection_string:
            return None
        if self.managed_identity:
            from azure.identity.aio import ManagedIdentityCredential

            return ManagedIdentityCredential(client_id=self.client_id)
        from azure.identity.aio import DefaultAzureCredential

        return DefaultAzureCredential(managed_identity_client_id=self.client_id)

    def table_client(self, table: str) -> TableClient:
        """An aio client of `table` (for the running event loop)."""
        # Imported on first use, with the Tables SDK: an app without Table memory never needs it.
        from azure.data.tables.aio import TableClient

        if self.connection_string:
            return TableClient.from_connection_string(self.connection_string, table)
        return TableClient(str(self.endpoint), table, credential=self.credential())
