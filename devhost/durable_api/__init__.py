"""The Durable HTTP API (`/runtime/webhooks/durabletask`, rpcBaseUrl) the durable client binding calls."""

from ._api import RPC_PREFIX, WEBHOOK_PREFIX, DurableApi, Engine, management_urls

__all__ = ["RPC_PREFIX", "WEBHOOK_PREFIX", "DurableApi", "Engine", "management_urls"]
