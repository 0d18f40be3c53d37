"""Which exporter `configure_telemetry` sets up, in a fresh interpreter each (the tracer provider
is process-wide and can be set once): none without settings (and no SDK imported at all), Azure
Monitor with a connection string, OTLP with the standard endpoint variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hosting_support import ROOT

PROBE = """
import json, sys
import hosting
how = hosting.configure_telemetry()
from opentelemetry import trace
print(json.dumps({
    "how": how,
    "sdk": "opentelemetry.sdk.trace" in sys.modules,
    "azure_monitor": "azure.monitor.opentelemetry" in sys.modules,
    "provider": type(trace.get_tracer_provider()).__name__,
}))
"""

_TELEMETRY_VARS = ("APPLICATIONINSIGHTS_CONNECTION_STRING", "OTEL_EXPORTER_OTLP_ENDPOINT",
                   "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER")


def _probe(**env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in _TELEMETRY_VARS}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_without_settings_no_sdk_is_loaded() -> None:
    expected = {"how": "none", "sdk": False, "azure_monitor": False, "provider": "ProxyTracerProvider"}
    assert _probe() == expected


def test_otlp_endpoint_configures_the_sdk_without_azure_monitor() -> None:
    found = _probe(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_BSP_SCHEDULE_DELAY="60000")
    assert found == {"how": "otlp", "sdk": True, "azure_monitor": False, "provider": "TracerProvider"}


def test_sdk_disabled_wins() -> None:
    found = _probe(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_SDK_DISABLED="true")
    assert found["how"] == "none" and found["sdk"] is False


def test_connection_string_loads_azure_monitor_only_then() -> None:
    found = _probe(
        # A loopback ingestion endpoint on a closed port: nothing leaves the machine.
        APPLICATIONINSIGHTS_CONNECTION_STRING=(
            "InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:9/"
        ),
        APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL="true",
    )
    assert found["how"] == "azure_monitor" and found["azure_monitor"] is True
    assert found["provider"] == "TracerProvider"
