"""The host's and its worker processes' log lines: the same format, with a turn's trace ids."""

from __future__ import annotations

import logging


class TraceIdFormatter(logging.Formatter):
    """Appends ``trace=… span=…`` to a line whose record carries OpenTelemetry ids (`otelTraceID`,
    `otelSpanID`: the attribute names of OpenTelemetry's logging instrumentation, which the app
    sets while a span is current)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        trace_id = getattr(record, "otelTraceID", None)
        if not trace_id or not trace_id.strip("0"):
            return line
        return f"{line} trace={trace_id} span={getattr(record, 'otelSpanID', '')}"
