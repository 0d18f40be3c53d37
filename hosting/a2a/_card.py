"""An agent's card (`/.well-known/agent-card.json`): who it is, what it can do (a skill per tool),
where its JSON-RPC endpoint is (derived from the request's own URL, so it is right behind any
host name) and how a caller authenticates."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from a2a.types import a2a_pb2 as pb
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_1_0, TransportProtocol

from agents import Agent

FUNCTION_KEY = "functionKey"
BEARER = "bearer"
TEXT = "text/plain"
DATA = "application/json"


def rpc_url(card_url: str, headers: Mapping[str, str]) -> str:
    """The JSON-RPC endpoint of the card at `card_url` (its path without the well-known suffix;
    no query: the function key travels in its header), on the host the caller named (`Host`, or
    a front door's `X-Forwarded-Host` / `-Proto`: the URL a worker sees may be the host's own)."""
    parts = urlsplit(card_url)
    lower = {k.lower(): v for k, v in headers.items()}
    host = (lower.get("x-forwarded-host") or lower.get("host") or parts.netloc).split(",")[0].strip()
    scheme = (lower.get("x-forwarded-proto") or parts.scheme).split(",")[0].strip()
    path = parts.path.removesuffix(AGENT_CARD_WELL_KNOWN_PATH)
    return urlunsplit((scheme, host, path, "", ""))


def agent_card(
    agent: Agent, card_url: str, headers: Mapping[str, str], *, easy_auth: bool, push: bool = False
) -> pb.AgentCard:
    described = agent.describe()
    tools = described.get("tools", [])
    skills = [
        pb.AgentSkill(
            id=str(t["name"]),
            name=str(t["name"]),
            description=str(t.get("description") or t["name"]),
            tags=["tool"],
        )
        for t in tools
    ]
    if not skills:  # a card names at least one skill: the agent's own conversation
        skills = [
            pb.AgentSkill(
                id="chat",
                name=agent.name,
                description=str(described.get("description") or agent.name),
                tags=["chat"],
            )
        ]
    schemes = {
        FUNCTION_KEY: pb.SecurityScheme(
            api_key_security_scheme=pb.APIKeySecurityScheme(
                location="header",
                name="x-functions-key",
                description="The function app's key (any of its function or host keys).",
            )
        )
    }
    requirements = [pb.SecurityRequirement(schemes={FUNCTION_KEY: pb.StringList()})]
    if easy_auth:
        schemes[BEARER] = pb.SecurityScheme(
            http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
                scheme="Bearer",
                bearer_format="JWT",
                description="An Entra ID token for the app (App Service Authentication).",
            )
        )
        requirements.append(pb.SecurityRequirement(schemes={BEARER: pb.StringList()}))
    return pb.AgentCard(
        name=agent.name,
        description=str(described.get("description") or f"The {agent.name} agent."),
        supported_interfaces=[
            pb.AgentInterface(
                url=rpc_url(card_url, headers),
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        version="1.0.0",
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=push),
        security_schemes=schemes,
        security_requirements=requirements,
        default_input_modes=[TEXT, DATA],
        default_output_modes=[TEXT],
        skills=skills,
    )
