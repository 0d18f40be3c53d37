"""Which exporter `configure_telemetry` sets up, in a fresh interpreter each (the tracer provider
is process-wide and can be set once): none without settings (and no SDK imported at all), Azure
Monitor with a connection string, OTLP with the standard endpoint variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

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


CREDENTIAL_PROBE = """
import gc, json
import hosting
how = hosting.configure_telemetry()
from azure.monitor.opentelemetry.exporter.export._base import BaseExporter
exporters = [o for o in gc.get_objects() if isinstance(o, BaseExporter)]
credentials = {id(e._credential): e._credential for e in exporters}
print(json.dumps({
    "how": how,
    "exporters": sorted(type(e).__name__ for e in exporters),
    "credentials": [type(c).__name__ for c in credentials.values()],
    "inner": [repr(vars(getattr(c, "_credential", None) or c)) for c in credentials.values() if c],
}))
"""

_LOOPBACK_CONNECTION = "InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:9/"


def _credential_probe(**env: str) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if k not in _TELEMETRY_VARS}
    done = subprocess.run(
        [sys.executable, "-c", CREDENTIAL_PROBE],
        env={**clean, "APPLICATIONINSIGHTS_CONNECTION_STRING": _LOOPBACK_CONNECTION,
             "APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL": "true", **env},
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_with_the_authentication_string_every_exporter_sends_with_the_identity() -> None:
    # What the Bicep sets, and what a resource with local authentication off requires.
    client_id = "11111111-2222-3333-4444-555555555555"
    setting = f"ClientId={client_id};Authorization=AAD"
    found = _credential_probe(APPLICATIONINSIGHTS_AUTHENTICATION_STRING=setting)
    assert found["how"] == "azure_monitor"
    assert {"AzureMonitorTraceExporter", "AzureMonitorLogExporter", "AzureMonitorMetricExporter"} <= set(
        found["exporters"]
    ), found
    # One credential for all of them (one token cache), the user-assigned identity the setting names.
    assert found["credentials"] == ["ManagedIdentityCredential"], found
    assert client_id in found["inner"][0]


def test_without_it_the_exporters_send_with_the_connection_string_alone() -> None:
    found = _credential_probe()
    assert found["how"] == "azure_monitor" and found["exporters"]
    assert found["credentials"] == ["NoneType"], found
