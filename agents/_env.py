"""The environment variables a model endpoint is read from: names only, so that a process that
needs only the names (the offline model's startup hook, before the host starts its workers)
imports nothing else."""

from __future__ import annotations

from enum import StrEnum


class ModelEnv(StrEnum):
    """The environment variables a model endpoint is read from (the one place they are spelled)."""

    OPENAI_API_KEY = "OPENAI_API_KEY"
    OPENAI_BASE_URL = "OPENAI_BASE_URL"
    OPENAI_CHAT_MODEL_ID = "OPENAI_CHAT_MODEL_ID"
    OPENAI_EMBEDDING_MODEL_ID = "OPENAI_EMBEDDING_MODEL_ID"
    AZURE_OPENAI_ENDPOINT = "AZURE_OPENAI_ENDPOINT"
    AZURE_OPENAI_CHAT_DEPLOYMENT_NAME = "AZURE_OPENAI_CHAT_DEPLOYMENT_NAME"
    AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME = "AZURE_OPENAI_EMBEDDING_DEPLOYMENT_NAME"
    AZURE_OPENAI_API_VERSION = "AZURE_OPENAI_API_VERSION"
    AZURE_OPENAI_API_KEY = "AZURE_OPENAI_API_KEY"


ENDPOINT_ENV = (ModelEnv.OPENAI_API_KEY, ModelEnv.OPENAI_BASE_URL, ModelEnv.AZURE_OPENAI_ENDPOINT)
"""Any of these set means a model endpoint is configured."""
