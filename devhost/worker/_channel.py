"""Framing of protocol messages between the host and a worker process.

In Azure the host and the worker speak gRPC over loopback. Here both ends are this package, so
a message travels pickled over a private socket pair the host creates for each worker process:
a 4-byte big-endian length, then the pickle. Nothing else can connect to the pair.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import Any

_HEADER = struct.Struct(">I")
MAX_MESSAGE = 512 * 1024 * 1024  # far above any entity batch or HTTP body the host accepts


async def send(writer: asyncio.StreamWriter, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    writer.write(_HEADER.pack(len(data)) + data)
    await writer.drain()


async def receive(reader: asyncio.StreamReader) -> Any | None:
    """The next message, or None once the other end has closed the pair."""
    try:
        header = await reader.readexactly(_HEADER.size)
        (size,) = _HEADER.unpack(header)
        if size > MAX_MESSAGE:
            raise ValueError(f"a {size}-byte message is over the channel's limit")
        return pickle.loads(await reader.readexactly(size))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
