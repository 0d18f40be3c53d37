"""A one-route app for the local host's gc.freeze() test: reports the frozen object counts."""

from __future__ import annotations

import gc
import json

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

FROZEN_AT_IMPORT = gc.get_freeze_count()
_IMPORTED_MARKER = [object()]  # exists from import on, so it must be among the frozen objects


@app.route(route="gc", methods=["GET"])
def gc_counts(req: func.HttpRequest) -> func.HttpResponse:
    body = {
        "atImport": FROZEN_AT_IMPORT,
        "now": gc.get_freeze_count(),
        "markerTracked": gc.is_tracked(_IMPORTED_MARKER),
        "markerInGenerations": any(
            obj is _IMPORTED_MARKER for gen in range(3) for obj in gc.get_objects(generation=gen)
        ),
    }
    return func.HttpResponse(json.dumps(body), mimetype="application/json")
