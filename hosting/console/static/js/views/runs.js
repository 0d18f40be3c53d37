// Runs: any run by agent, session and correlation id, with its status, and its live stream while
// it runs (or the run resource's long poll where the server does not stream).
import { get, seg } from "../api.js";
import { field, formatUsage, h, statusBadge } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { navigate } from "../shell.js";
import { followRun } from "../stream.js";
import { assistantBlock, keepExpanded, problemBox, toolCall } from "../transcript.js";
import { listAgents } from "./agents.js";

export async function render(main, [agentParam, sessionId, correlationId]) {
  const agents = await listAgents();
  const picker = h("select", { name: "agent" }, agents.map((a) => h("option", { value: a.name }, a.name)));
  if (agents.some((a) => a.name === agentParam)) picker.value = agentParam;
  const session = h("input", { name: "session", required: true, value: sessionId || "", autocomplete: "off" });
  const run = h("input", { name: "run", required: true, value: correlationId || "", autocomplete: "off" });
  const form = h("form.inline-form", {
    onsubmit: (e) => { e.preventDefault(); navigate("runs", picker.value, session.value.trim(), run.value.trim()); },
  }, field("Agent", picker), field("Session id", session), field("Run (correlation id)", run),
  h("div.actions", {}, h("button", { type: "submit" }, "Show run")));
  const area = h("div#run-view", { "aria-live": "polite" });
  main.append(h("h2", {}, "Runs"), form, area);
  if (!agentParam || !sessionId || !correlationId) return null;

  const controller = new AbortController();
  const path = `agents/${seg(agentParam)}/sessions/${seg(sessionId)}/runs/${seg(correlationId)}`;
  const heading = h("p", {}, "Status: ", h("span#run-status", {}, statusBadge("loading")));
  area.replaceChildren(heading);
  const setStatus = (value) => heading.querySelector("#run-status").replaceChildren(statusBadge(value));

  function showResult(body, live = null) {
    setStatus(body.status);
    const block = assistantBlock(body.response?.messages || [], {});
    if (live) keepExpanded(live, block);
    block.append(h("p.usage", {}, `Tokens: ${formatUsage(body.response?.usage)} · session `,
      h("a", { href: `#/sessions/${seg(agentParam)}/${seg(sessionId)}` }, sessionId)));
    area.replaceChildren(heading, block);
  }
  function showFailure(error) {
    setStatus(error.status === 404 || error.status === 400 ? "unknown" : "failed");
    area.replaceChildren(heading, problemBox(error.problem || { detail: error.message }, "Run failed"));
  }

  try {
    const first = await get(path);
    if (first.status !== "pending") {
      if (first.status === "failed") showFailure({ problem: { ...first.error, detail: first.error?.message } });
      else showResult(first);
      return null;
    }
  } catch (error) {
    showFailure(error);
    return null;
  }
  // Still running: follow it live.
  setStatus("pending");
  const live = h("div.msg.assistant.live", { "aria-busy": "true" }, h("div.who", {}, "Agent"));
  const text = h("div.markdown.streaming");
  live.append(text);
  area.append(live);
  const calls = new Map();
  let buffer = "";
  followRun({ agent: agentParam, sessionId, correlationId }, {
    signal: controller.signal,
    onDelta: (d) => { buffer += d; renderMarkdown(buffer, text); },
    onToolCall: (c) => { const el = toolCall(c); calls.set(c.call_id, el); live.insertBefore(el, text); },
    onToolResult: (r) => calls.get(r.call_id)?.setResult(r.result, r.is_error === true),
    onRestarted: () => { buffer = ""; calls.forEach((el) => el.remove()); calls.clear(); renderMarkdown("", text); },
  }).then((body) => showResult(body, live), (error) => { if (!controller.signal.aborted) showFailure(error); });
  return () => controller.abort();
}
