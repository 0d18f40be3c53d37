"""The blob store behind archived history: one small interface and the embedded file backend.

Chunk paths are `{entity}/{session}/{epoch}/{chunk name}` (entity names lower-cased: the Durable
extension treats them case-insensitively; the session key percent-encoded, so no key can name a
path outside its own folder).
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import re
from typing import Protocol
from urllib.parse import quote

_SEGMENT = re.compile(r"[A-Za-z0-9._~%-]+")


class ChunkStore(Protocol):
    """Where archived chunks live: write-once blobs addressed by path."""

    async def put(self, path: str, data: bytes) -> None:
        """Store `data` at `path` (a chunk's name is its digest: writing it again is harmless)."""
        ...

    async def get(self, path: str) -> bytes | None:
        """The blob at `path`, or None when there is none."""
        ...

    async def delete(self, path: str) -> None:
        """Remove the blob at `path` (nothing when it is already gone)."""
        ...

    async def list_paths(self, prefix: str) -> list[str]:
        """Paths of every blob whose path starts with `prefix`."""
        ...

    def describe(self) -> str:
        """Where the blobs are, for logs and health output."""
        ...

    async def close(self) -> None:
        """Release the running loop's connections (the store stays usable)."""
        ...


def session_prefix(entity: str, key: str) -> str:
    """The folder of one session's chunks (ends with `/`)."""
    return f"{entity.lower()}/s-{quote(key, safe='')}/"


def epoch_prefix(entity: str, key: str, epoch: str) -> str:
    """The folder of one archive epoch of a session (ends with `/`)."""
    return f"{session_prefix(entity, key)}{epoch}/"


def chunk_path(entity: str, key: str, epoch: str, name: str) -> str:
    """Where a chunk is stored."""
    return f"{epoch_prefix(entity, key, epoch)}{name}"


async def delete_prefix(store: ChunkStore, prefix: str) -> int:
    """Delete every blob under `prefix`; returns how many."""
    paths = await store.list_paths(prefix)
    for path in paths:
        await store.delete(path)
    return len(paths)


class FileChunkStore:
    """Chunks as files under a directory: the embedded default (`make run` needs nothing else).

    Writes go to a temporary file that is fsynced and renamed into place, so a crash never
    leaves a partial chunk under its real name.
    """

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root.resolve()

    def _file(self, path: str) -> pathlib.Path:
        parts = path.split("/")
        if not parts or not all(_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts):
            raise ValueError(f"not a chunk path: {path!r}")
        return self.root.joinpath(*parts)

    def describe(self) -> str:
        return f"files under {self.root}"

    async def close(self) -> None:
        return None

    async def put(self, path: str, data: bytes) -> None:
        await asyncio.to_thread(self._put, self._file(path), data)

    @staticmethod
    def _put(file: pathlib.Path, data: bytes) -> None:
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, file)
        directory = os.open(file.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    async def get(self, path: str) -> bytes | None:
        file = self._file(path)
        try:
            return await asyncio.to_thread(file.read_bytes)
        except FileNotFoundError:
            return None

    async def delete(self, path: str) -> None:
        await asyncio.to_thread(self._file(path).unlink, True)

    async def list_paths(self, prefix: str) -> list[str]:
        return await asyncio.to_thread(self._list, prefix)

    def _list(self, prefix: str) -> list[str]:
        folder, _, start = prefix.rpartition("/")
        base = self._file(folder) if folder else self.root
        if not base.is_dir():
            return []
        out: list[str] = []
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                if name.startswith("."):
                    continue  # a write in progress
                relative = pathlib.Path(dirpath, name).relative_to(self.root).as_posix()
                if relative.startswith(prefix):
                    out.append(relative)
        del start
        return sorted(out)
