"""The official Durable Functions Python samples (v2 programming model) served unmodified by
``python -m devhost``: each sample's HTTP starter is called as its tutorial says, the durable
client's ``statusQueryGetUri`` is followed until the instance ends, and the documented output is
checked (samples/README.md names the source commit)."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient
from azurite_support import Azurite, azurite  # noqa: F401 - the fixture

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = pathlib.Path(__file__).parent / "samples"
_WEBHOOKS = "/runtime/webhooks/durabletask/instances/"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sample:
    def __init__(self, popen: subprocess.Popen[bytes], port: int, log: pathlib.Path) -> None:
        self.popen = popen
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def serve(sample: str, tmp: pathlib.Path, **settings: str) -> Iterator[Sample]:
    """`python -m devhost` in the sample's folder (the app root), as `func start` runs there."""
    port = _free_port()
    log = tmp / f"{sample}.log"
    env = {k: v for k, v in os.environ.items() if k not in ("DEVHOST_FUNCTION_KEY", "DEVHOST_STARTUP_HOOK")}
    # devhost itself comes from the repository; the sample's folder is the current directory.
    env["PYTHONPATH"] = str(REPO)
    env.update(settings)
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            [sys.executable, "-m", "devhost", "--app", "function_app", "--port", str(port),
             "--data-dir", str(tmp / f"{sample}-data")],
            cwd=SAMPLES / sample, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    proc = Sample(popen, port, log)
    try:
        deadline = time.monotonic() + 30
        while "devhost ready on" not in proc.output():
            if popen.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"devhost did not start the sample:\n{proc.output()}")
            time.sleep(0.05)
        yield proc
    finally:
        popen.terminate()
        try:
            popen.wait(15)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait(10)


def _request(method: str, url: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _start(proc: Sample, method: str, path: str, body: bytes | None = None,
           headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Calls the starter and checks the check-status answer `create_check_status_response` gives."""
    status, resp_headers, raw = _request(method, proc.url + path, body, headers)
    assert status == 202, (status, raw, proc.output())
    payload: dict[str, Any] = json.loads(raw)
    status_uri = payload["statusQueryGetUri"]
    assert status_uri.startswith(proc.url + _WEBHOOKS + payload["id"]), payload
    assert resp_headers["Location"] == status_uri
    return payload


def _follow(proc: Sample, status_uri: str, timeout: float = 30) -> dict[str, Any]:
    """Polls the status URL as a client of the tutorial does: 202 while it runs, 200 at the end."""
    deadline = time.monotonic() + timeout
    while True:
        status, headers, raw = _request("GET", status_uri)
        if status == 200:
            body: dict[str, Any] = json.loads(raw)
            return body
        assert status == 202, (status, raw, proc.output())
        assert headers["Location"] == status_uri
        if time.monotonic() > deadline:
            raise AssertionError(f"the instance did not finish: {raw!r}\n{proc.output()}")
        time.sleep(0.05)


def test_function_chaining_sample(tmp_path: pathlib.Path) -> None:
    with serve("function_chaining", tmp_path) as proc:
        started = _start(proc, "GET", "/api/orchestrators/my_orchestrator")
        result = _follow(proc, started["statusQueryGetUri"])
    assert result["name"] == "my_orchestrator"
    assert result["instanceId"] == started["id"]
    assert result["runtimeStatus"] == "Completed", result
    assert result["output"] == ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]


def test_blueprint_sample(tmp_path: pathlib.Path) -> None:
    with serve("blueprint", tmp_path) as proc:
        started = _start(proc, "GET", "/api/startOrchestrator")
        result = _follow(proc, started["statusQueryGetUri"])
        # The plain HTTP function registered on the same app, next to the blueprint's.
        status, _, hello = _request("GET", f"{proc.url}/api/HttpTrigger?name=Tokyo")
    assert result["runtimeStatus"] == "Completed", result
    assert result["output"] == ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]
    assert status == 200
    assert hello == b"Hello, Tokyo. This HTTP triggered function executed successfully."


def _site(root: pathlib.Path) -> int:
    """A folder as the tutorial's v1 app lays it out (E2_ folders holding `__init__.py` and
    `function.json`, which `E2_GetFileList` picks) plus files it skips; returns the bytes of those
    it backs up."""
    total = 0
    for name, size in (("E2_BackupSiteContent", 700), ("E2_GetFileList", 300), ("E2_CopyFileToBlob", 512)):
        folder = root / name
        folder.mkdir(parents=True)
        for file, extra in (("__init__.py", 0), ("function.json", 11)):
            (folder / file).write_bytes(b"x" * (size + extra))
            total += size + extra
        (folder / "notes.txt").write_bytes(b"skipped")
    (root / "other").mkdir()
    (root / "other" / "__init__.py").write_bytes(b"not under an E2_ folder")
    return total


def test_fan_out_fan_in_sample(tmp_path: pathlib.Path, azurite: Azurite) -> None:  # noqa: F811
    site = tmp_path / "site"
    expected = _site(site)
    with serve("fan_in_fan_out", tmp_path, AzureWebJobsStorage=azurite.connection_string) as proc:
        # The tutorial's request: POST the root directory as a JSON string.
        started = _start(proc, "POST", "/api/orchestrators/E2_BackupSiteContent",
                         json.dumps(str(site)).encode(), {"Content-Type": "application/json"})
        result = _follow(proc, started["statusQueryGetUri"])
    assert result["runtimeStatus"] == "Completed", result
    assert result["input"] == str(site)
    assert result["output"] == expected
    blob_service = BlobServiceClient.from_connection_string(azurite.connection_string)
    container = blob_service.get_container_client("backups")
    blobs = {blob.name: blob.size for blob in container.list_blobs()}
    assert blobs == {
        f"{folder}_{file}": (site / folder / file).stat().st_size
        for folder in ("E2_BackupSiteContent", "E2_GetFileList", "E2_CopyFileToBlob")
        for file in ("__init__.py", "function.json")
    }


def test_fan_out_fan_in_sample_without_input_fails_as_written(tmp_path: pathlib.Path,
                                                             azurite: Azurite) -> None:  # noqa: F811
    """The orchestrator raises on an empty directory path: the instance ends Failed, and its status
    (200, as the extension answers a failed instance) carries the exception's message."""
    with serve("fan_in_fan_out", tmp_path, AzureWebJobsStorage=azurite.connection_string) as proc:
        started = _start(proc, "POST", "/api/orchestrators/E2_BackupSiteContent", b'""',
                         {"Content-Type": "application/json"})
        result = _follow(proc, started["statusQueryGetUri"])
    assert result["runtimeStatus"] == "Failed", result
    assert "A directory path is required as input" in json.dumps(result["output"])


@pytest.mark.parametrize("sample", ["function_chaining", "fan_in_fan_out", "blueprint"])
def test_the_samples_are_the_upstream_files(sample: str) -> None:
    """Guards "unmodified": the README records each file's SHA-256 at the source commit."""
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    files = sorted(p for p in (SAMPLES / sample).glob("*.py"))
    assert files
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"`{sample}/{path.name}`" in readme and digest in readme, (path, digest)
