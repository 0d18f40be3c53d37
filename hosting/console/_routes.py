"""The console's route: one anonymous HTTP function serving the page and its assets.

It is registered like every other route (the same `RouteSpec` table mechanism), but it is not part
of the API, so `build_app` leaves it out of the OpenAPI document: it answers HTML, scripts and
styles, not JSON, and holds no data (the page calls the documented API with the caller's key).
"""

from __future__ import annotations

from ..http import Operation, RouteResponse, RouteSpec

CONSOLE_ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec(
        "console",
        "console/{*path}",
        (
            Operation(
                "GET",
                "The web console (index.html) and its static assets.",
                (
                    RouteResponse(200, "The asset."),
                    RouteResponse(304, "Not modified (ETag)."),
                    RouteResponse(404, "No such asset."),
                ),
            ),
        ),
        anonymous=True,
        needs_client=False,
        group="console",
    ),
)
