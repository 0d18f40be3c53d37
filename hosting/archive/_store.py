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
from collections.abc import Callable, Iterator
from typing import Protocol
from urllib.parse import quote

_SEGMENT = re.compile(r"[A-Za-z0-9._~%-]+")
_CAPITAL = re.compile(r"[A-Z]")
_MARKED = re.compile(r"\^([a-z])")
_FILE_NAME = re.compile(r"(?:[a-z0-9._~%-]|\^[a-z])+")

LAYOUT = "^v2"
"""The folder of the file store's case-proof layout. Chunks written before it sit directly under
the root, named as their paths; no path segment holds a '^', so the two never meet."""


def file_name(segment: str) -> str:
    """A chunk path segment as a file name no file system folds into another's: each capital
    letter as '^' and the letter in lower case ('^' is never in a chunk path). Session ids
    `Alice` and `alice` would otherwise share a folder on macOS and Windows, and one session's
    orphan cleanup would delete the other's chunks."""
    return _CAPITAL.sub(lambda capital: "^" + capital[0].lower(), segment)


def segment_of(name: str) -> str | None:
    """The chunk path segment `file_name` mapped to `name`; None for a name it never makes."""
    if _FILE_NAME.fullmatch(name) is None:
        return None
    return _MARKED.sub(lambda marked: marked[1].upper(), name)


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
        return self.root.joinpath(LAYOUT, *(file_name(p) for p in _parts(path)))

    def _legacy_file(self, path: str) -> pathlib.Path:
        """Where the earlier layout (the path as it is) kept the chunk: read, listed and deleted
        there too, so a store written before keeps working."""
        return self.root.joinpath(*_parts(path))

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
        for file in (self._file(path), self._legacy_file(path)):
            # A chunk's name is its digest, checked on reading: the earlier layout's folder on a
            # case-insensitive system can only yield this very chunk or nothing.
            try:
                return await asyncio.to_thread(file.read_bytes)
            except FileNotFoundError:
                continue
        return None

    async def delete(self, path: str) -> None:
        await asyncio.to_thread(self._file(path).unlink, True)
        await asyncio.to_thread(self._legacy_file(path).unlink, True)

    async def list_paths(self, prefix: str) -> list[str]:
        return await asyncio.to_thread(self._list, prefix)

    def _list(self, prefix: str) -> list[str]:
        folder = prefix.rpartition("/")[0]
        parts = _parts(folder) if folder else []
        found = set(_walk(self.root / LAYOUT, [file_name(p) for p in parts], segment_of))
        found.update(_walk(self.root, parts, lambda name: name if name != LAYOUT else None))
        return sorted(path for path in found if path.startswith(prefix))


def _parts(path: str) -> list[str]:
    parts = path.split("/")
    if not parts or not all(_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts):
        raise ValueError(f"not a chunk path: {path!r}")
    return parts


def _walk(top: pathlib.Path, folders: list[str], segment: Callable[[str], str | None]) -> Iterator[str]:
    """The chunk paths of the files below `top/folders...`, each file name turned back into its
    segment by `segment` (None: not a chunk's). Folders are matched by their names as stored, not
    as the file system would resolve them: on a case-insensitive system the earlier layout's
    `s-Alice` must not list `s-alice`."""
    base = top
    for name in folders:
        try:
            entries = os.listdir(base)
        except (FileNotFoundError, NotADirectoryError):
            return
        if name not in entries:
            return
        base = base / name
    for dirpath, dirs, files in os.walk(base):
        dirs[:] = [name for name in dirs if segment(name) is not None]  # the other layout's tree
        segments = [segment(name) or "" for name in pathlib.Path(dirpath).relative_to(top).parts]
        for name in files:
            last = None if name.startswith(".") else segment(name)  # "." : a write in progress
            if last is not None:
                yield "/".join([*segments, last])
