"""Azurite (the real Azure Storage emulator, from npm into .tools/) on a free port for a test."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from e2e_support import REPO, free_port

AZURITE_BLOB = REPO / ".tools" / "node_modules" / ".bin" / "azurite-blob"
# Azurite's documented well-known development account.
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class Azurite:
    """`azurite-blob` on loopback, a free port and a temporary --location."""

    def __init__(self, location: pathlib.Path, log_path: pathlib.Path) -> None:
        self.location = location
        self.log_path = log_path
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{self.port}/{ACCOUNT};"
        )

    def start(self, timeout: float = 30.0) -> Azurite:
        if not AZURITE_BLOB.exists():
            raise AssertionError(f"{AZURITE_BLOB} is missing: run .ci/services.sh (make services)")
        self.port = free_port()
        self.location.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                [str(AZURITE_BLOB), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                 "--location", str(self.location), "--disableTelemetry", "--skipApiVersionCheck", "--silent"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"azurite exited with {self.proc.returncode}: {self.log_path.read_text()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"azurite did not start in {timeout}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """Azurite's blob service for the tests of one module (import this fixture to use it)."""
    root = tmp_path_factory.mktemp("azurite")
    server = Azurite(root / "data", root / "azurite.log").start()
    try:
        yield server
    finally:
        server.stop()
