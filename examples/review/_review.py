"""The reviewer's verdict, written once: the pydantic model and the JSON schema derived from it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Review(BaseModel):
    """The reviewer's verdict on a draft (the reviewer agent's structured output)."""

    model_config = ConfigDict(extra="forbid")

    approved: bool = Field(description="True when the draft can be published as it is.")
    feedback: str = Field(description="What to change (or why it is good).")


REVIEW_SCHEMA: dict[str, Any] = Review.model_json_schema()
"""`Review` as the JSON schema the workflow asks the reviewer to answer in."""
