import { get } from "../api.js";
import { h } from "../dom.js";

let cached = null;

/** The hosted agents (GET /api/agents), fetched once per page load. */
export async function listAgents() {
  if (!cached) cached = get("agents").then((body) => body.agents).catch((e) => { cached = null; throw e; });
  return cached;
}

/** The tools with their descriptions (older servers send only the names). */
function tools(agent) {
  const details = agent.tool_details && agent.tool_details.length
    ? agent.tool_details
    : agent.tools.map((name) => ({ name }));
  return h("ul.tools", {}, details.map((t) =>
    h("li", {}, h("code", {}, t.name), t.description ? h("span.muted", {}, ` — ${t.description}`) : null)));
}

function fact(term, value) {
  return [h("dt", {}, term), h("dd", {}, value)];
}

export async function render(main) {
  main.append(h("h2", {}, "Agents"));
  const agents = await listAgents();
  const list = h("ul.cards", { "aria-label": "Hosted agents" });
  for (const agent of agents) {
    list.append(
      h("li.card", {},
        h("h3", {}, agent.name),
        h("p", {}, agent.description || "No description."),
        h("dl.facts", {},
          fact("Tools", agent.tools.length ? tools(agent) : "none"),
          fact("Context providers", agent.context_providers.length ? agent.context_providers.join(", ") : "none"),
          fact("Structured output", agent.structured_output ? "yes (JSON schema)" : "no"),
          fact("History", agent.history_mode === "service" ? "kept by the model service" : "kept in the session"),
          fact("Entity", h("code", {}, agent.entity)),
        ),
        agent.response_schema && h("details", {}, h("summary", {}, "Structured output schema"),
          h("pre.json", { tabindex: "0" }, JSON.stringify(agent.response_schema, null, 2))),
        h("p.actions", {},
          h("a.button", { href: `#/chat/${encodeURIComponent(agent.name)}` }, `Chat with ${agent.name}`),
          h("a.button.secondary", { href: `#/sessions/${encodeURIComponent(agent.name)}` }, "Sessions")),
      ),
    );
  }
  main.append(list);
}
