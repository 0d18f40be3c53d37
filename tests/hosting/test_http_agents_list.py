"""`GET /api/agents` tells a client (the console) what each agent offers."""

from __future__ import annotations

from hosting_support import Api


async def test_agents_carry_their_tools_descriptions_and_output_schema(offline_api: Api) -> None:
    answer = await offline_api.get("/api/agents")
    assert answer.status == 200
    agents = {a["name"]: a for a in answer.json()["agents"]}
    reviewer, assistant = agents["reviewer"], agents["assistant"]
    assert reviewer["structured_output"] is True
    assert set(reviewer["response_schema"]["properties"]) == {"approved", "feedback"}
    assert assistant["response_schema"] is None and assistant["structured_output"] is False
    assert assistant["description"] == "plain"
    for agent in agents.values():
        assert [t["name"] for t in agent["tool_details"]] == agent["tools"]
