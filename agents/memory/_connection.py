"""How the Table memory store reaches its storage account: a connection named the way Azure
Functions names connections (hosting/archive reads the blob side of the same setting family).

* `<name>` holding a connection string (`DefaultEndpointsProtocol=...`, or
  `UseDevelopmentStorage=true` for Azurite), or
* identity-based: `<name>__tableServiceUri` (or `<name>__accountName`, for
  `https://<account>.table.core.windows.net`), with `<name>__credential=managedidentity` and
  `<name>__clientId` for a user-assigned managed identity
  (https://learn.microsoft.com/azure/azure-functions/functions-reference#connecting-to-host-storage-with-an-identity,
  "Common properties for identity-based connections"). With `managedidentity` the app uses
  `ManagedIdentityCredential` (that identity and nothing else); otherwise `DefaultAzureCredential`,
  which also picks the identity named by `__clientId` when it runs on Azure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from azure.data.tables.aio import TableClient

from .._errors import AgentConfigurationError


@dataclass(frozen=True)
class TableConnection:
    """A storage account's Table service: a connection string, or a service URI with an identity."""

    connection_string: str | None = field(default=None, repr=False)  # it may hold the account key
    endpoint: str | None = None
    client_id: str | None = None
    managed_identity: bool = False

    @classmethod
    def from_settings(cls, name: str, environ: Mapping[str, str] | None = None) -> TableConnection:
        """The connection named `name` (e.g. `AzureWebJobsStorage`) in the app settings."""
        env = os.environ if environ is None else environ
        value = env.get(name, "").strip()
        if value:
            return cls(connection_string=value)
        endpoint = env.get(f"{name}__tableServiceUri", "").strip().rstrip("/")
        account = env.get(f"{name}__accountName", "").strip()
        if not endpoint and account:
            endpoint = f"https://{account}.table.core.windows.net"
        if not endpoint:
            raise AgentConfigurationError(
                f"the Table memory store has no connection {name!r}: set {name} to a connection string, "
                f"or {name}__tableServiceUri / {name}__accountName for an identity-based connection"
            )
        credential = env.get(f"{name}__credential", "").strip().lower()
        if credential not in ("", "managedidentity"):
            raise AgentConfigurationError(
                f"{name}__credential must be 'managedidentity' or unset, not {credential!r}"
            )
        return cls(
            endpoint=endpoint,
            client_id=env.get(f"{name}__clientId", "").strip() or None,
            managed_identity=credential == "managedidentity",
        )

    @staticmethod
    def is_real(name: str, environ: Mapping[str, str]) -> bool:
        """Whether the connection `name` is a storage account (not absent, not Azurite's
        `UseDevelopmentStorage=true`): the Table store is then the default."""
        value = environ.get(name, "").strip()
        if value:
            return "usedevelopmentstorage=true" not in value.lower().replace(" ", "")
        identity = (environ.get(f"{name}__{key}", "").strip() for key in ("tableServiceUri", "accountName"))
        return any(identity)

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
