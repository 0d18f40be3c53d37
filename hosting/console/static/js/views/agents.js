import { get } from "../api.js";
import { h } from "../dom.js";

let cached = null;

/** The hosted agents (GET /api/agents), fetched once per page load. */
export async function listAgents() {
  if (!cached) cached = get("agents").then((body) => body.agents).catch((e) => { cached = null; throw e; });
  return cached;
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
          fact("Tools", agent.tools.length ? agent.tools.map((t) => h("code", {}, t)).flatMap((c, i) => (i ? [", ", c] : [c])) : "none"),
          fact("Context providers", agent.context_providers.length ? agent.context_providers.join(", ") : "none"),
          fact("Structured output", agent.structured_output ? "yes (JSON schema)" : "no"),
          fact("History", agent.history_mode === "service" ? "kept by the model service" : "kept in the session"),
          fact("Entity", h("code", {}, agent.entity)),
        ),
        h("p.actions", {},
          h("a.button", { href: `#/chat/${encodeURIComponent(agent.name)}` }, `Chat with ${agent.name}`),
          h("a.button.secondary", { href: `#/sessions/${encodeURIComponent(agent.name)}` }, "Sessions")),
      ),
    );
  }
  main.append(list);
}
