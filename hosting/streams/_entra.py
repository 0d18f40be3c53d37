"""Redis credentials from Microsoft Entra ID (`DURABLE_AGENTS_STREAM_REDIS_ENTRA`): imported only
when the Redis stream store is configured, with redis-py itself (a tenth of a second of a worker's
start that an app without Redis never needs)."""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

from redis.credentials import CredentialProvider

from .._errors import HostingConfigurationError

REDIS_SCOPE = "https://redis.azure.com/.default"


class EntraIdCredentials(CredentialProvider):
    """redis-py credentials from Microsoft Entra ID: the token is the password, its object id
    (``oid`` claim) the user name, as Azure Cache for Redis / Azure Managed Redis expect.

    A token is fetched for each new connection and reused until five minutes before it expires.
    """

    def __init__(self, credential: Any = None) -> None:
        self._credential = credential
        self._lock = threading.Lock()
        self._cached: tuple[str, str, float] | None = None

    def _token(self) -> tuple[str, str, float]:
        with self._lock:
            if self._cached is not None and self._cached[2] - 300 > time.time():
                return self._cached
            if self._credential is None:
                from azure.identity import DefaultAzureCredential

                self._credential = DefaultAzureCredential()
            token = self._credential.get_token(REDIS_SCOPE)
            self._cached = (_object_id(token.token), token.token, float(token.expires_on))
            return self._cached

    def get_credentials(self) -> tuple[str, str]:
        user, password, _ = self._token()
        return user, password

    async def get_credentials_async(self) -> tuple[str, str]:
        import asyncio

        # A token refresh does blocking I/O; keep it off the loop.
        return await asyncio.to_thread(self.get_credentials)


def _object_id(token: str) -> str:
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return str(claims["oid"])
    except (IndexError, KeyError, ValueError) as exc:
        raise HostingConfigurationError(f"the Entra ID token for Redis carries no object id: {exc}") from exc

