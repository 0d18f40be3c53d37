"""The web console: a static single-page app the function app serves itself under
`/api/console/`, built only on the public HTTP API (docs/console.md)."""

from ._assets import CONTENT_SECURITY_POLICY, Asset, Console, load_assets
from ._routes import CONSOLE_ROUTES

__all__ = ["CONSOLE_ROUTES", "CONTENT_SECURITY_POLICY", "Asset", "Console", "load_assets"]
