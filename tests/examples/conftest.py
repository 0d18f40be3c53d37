"""Fixtures of the examples' tests: the hosting tests' app (the test agents with the review workflow
wired in, as function_app.py does), local host and HTTP driver.

The examples are hosted apps, so their tests drive them with the hosting tests' support modules
(real `azure.functions.HttpRequest` objects, entities through the batch protocol); that folder is
put on the import path here rather than copying them.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "hosting"))

from hosting_fixtures import api, app, host, hosted_app, offline_api, public_origin

__all__ = ["api", "app", "host", "hosted_app", "offline_api", "public_origin"]
