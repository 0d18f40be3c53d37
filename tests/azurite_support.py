"""Azurite (the real Azure Storage emulator, from npm into .tools/) on free ports for a test module:
its blob, queue and table services (`azurite`, Azurite 3.35)."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
AZURITE = REPO / ".tools" / "node_modules" / ".bin" / "azurite"
# Azurite's documented well-known development account.
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def _free_ports(count: int) -> list[int]:
    """Loopback ports that were free a moment ago (held open together, so all differ)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


class Azurite:
    """`azurite` (blob, queue and table services) on loopback, free ports and a temporary --location."""

    def __init__(self, location: pathlib.Path, log_path: pathlib.Path) -> None:
        self.location = location
        self.log_path = log_path
        self.port = 0
        self.queue_port = 0
        self.table_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{self.port}/{ACCOUNT};"
            f"QueueEndpoint=http://127.0.0.1:{self.queue_port}/{ACCOUNT};"
            f"TableEndpoint=http://127.0.0.1:{self.table_port}/{ACCOUNT};"
        )

    def start(self, timeout: float = 30.0) -> Azurite:
        if not AZURITE.exists():
            raise AssertionError(f"{AZURITE} is missing: run .ci/services.sh (make services)")
        self.port, self.queue_port, self.table_port = _free_ports(3)
        self.location.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                 "--queueHost", "127.0.0.1", "--queuePort", str(self.queue_port),
                 "--tableHost", "127.0.0.1", "--tablePort", str(self.table_port),
                 "--location", str(self.location), "--disableTelemetry", "--skipApiVersionCheck", "--silent"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        waiting = [self.port, self.queue_port, self.table_port]
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"azurite exited with {self.proc.returncode}: {self.log_path.read_text()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", waiting[0]), timeout=0.5):
                    waiting.pop(0)
                    if not waiting:
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
    """Azurite's services for the tests of one module (import this fixture to use it)."""
    root = tmp_path_factory.mktemp("azurite")
    server = Azurite(root / "data", root / "azurite.log").start()
    try:
        yield server
    finally:
        server.stop()
