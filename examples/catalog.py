"""The example agents this app hosts (``function_app.py`` builds the app from ``AGENTS``).

They use the model from the environment (see docs/agents.md); with nothing configured the local
host points them at the offline model server, so they work without any key.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agents import Agent, HistoryReducer, tool
from agents.memory import ConversationMemoryProvider, UserMemoryProvider

from .mcp_tools import mcp_example_agents
from .review import Review

_CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "showers", "windy", "foggy", "snow")


@tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, object]:
    """Get today's weather for a city (a deterministic demo forecast, not a real service).

    Args:
        city: The city, e.g. "Paris".
        unit: Temperature unit.
    """
    digest = hashlib.sha256(city.strip().lower().encode()).digest()
    celsius = digest[0] % 35 - 5
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return {
        "city": city.strip(),
        "condition": _CONDITIONS[digest[1] % len(_CONDITIONS)],
        "temperature": temperature,
        "unit": unit,
    }


@tool
def get_time(timezone: str = "UTC") -> str:
    """Get the current date and time in an IANA time zone.

    Args:
        timezone: An IANA time zone name such as "Europe/Paris" or "UTC".
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {timezone!r}; use an IANA name like 'Europe/Paris'") from None
    return datetime.now(UTC).astimezone(zone).isoformat(timespec="seconds")


@tool(requires_approval=True)
def book_hotel(city: str, nights: int) -> dict[str, object]:
    """Book a hotel room (a demo booking, not a real service). A person approves each booking
    before it is made (docs/hosting.md "Tool approvals").

    Args:
        city: The city to stay in.
        nights: How many nights.
    """
    if nights < 1:
        raise ValueError("nights must be at least 1")
    digest = hashlib.sha256(f"{city.strip().lower()}:{nights}".encode()).hexdigest()
    return {"city": city.strip(), "nights": nights, "confirmation": digest[:8].upper()}


assistant = Agent(
    name="assistant",
    description="A plain, helpful assistant.",
    instructions="You are a helpful, concise assistant.",
)

concierge = Agent(
    name="concierge",
    description=(
        "A travel concierge with weather and time tools, hotel bookings a person approves, a memory, "
        "and a bounded history."
    ),
    instructions=(
        "You are a travel concierge. Use the tools for weather and local time rather than guessing, "
        "book hotels when asked, and remember the traveller's preferences."
    ),
    tools=[get_weather, get_time, book_hotel],
    # The traveller's facts outlive the session when it belongs to a user (per session otherwise).
    context_providers=[
        UserMemoryProvider(),
        ConversationMemoryProvider(),
        HistoryReducer(max_messages=24, keep_messages=12),
    ],
)

writer = Agent(
    name="writer",
    description="Drafts short texts and revises them from feedback.",
    instructions=(
        "You are a copywriter. Write the requested text; when given reviewer feedback, revise your "
        "previous draft accordingly. Answer with the text only."
    ),
)

reviewer = Agent(
    name="reviewer",
    description="Reviews a draft and answers {approved, feedback} as JSON.",
    instructions=(
        "You are a demanding editor. Review the draft you are given for clarity, accuracy and tone. "
        "Approve it only when it is ready to publish; otherwise say exactly what to change."
    ),
    response_format=Review,
)

AGENTS: list[Agent] = [assistant, concierge, writer, reviewer, *mcp_example_agents()]
"""Every agent the app hosts, by unique name (timekeeper, of examples.mcp_tools, once the MCP
server it uses is set: `make run` starts one)."""
