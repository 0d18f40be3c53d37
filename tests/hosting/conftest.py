"""Fixtures of the hosting tests: defined in hosting_fixtures (shared with tests/examples)."""

from hosting_fixtures import api, app, host, hosted_app, offline_api, public_origin

__all__ = ["api", "app", "host", "hosted_app", "offline_api", "public_origin"]
