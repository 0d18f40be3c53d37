"""Fixtures of the `state` tests: both JSON Schemas as validators."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator
from state_helpers import our_validator, reference_validator


@pytest.fixture(scope="session")
def our_schema() -> Draft202012Validator:
    return our_validator()


@pytest.fixture(scope="session")
def reference_schema() -> Draft202012Validator:
    return reference_validator()
