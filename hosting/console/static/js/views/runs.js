// Runs: the agent's recent runs, and any run by agent, session and correlation id, with its
// status, and its live stream while it runs (or the run resource's long poll where the server
// does not stream).
import { get, seg } from "../api.js";
import { field, formatTime, formatUsage, h, statusBadge } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { navigate, pickAgent } from "../shell.js";
import { RunNotFound, followRun, waitingCalls } from "../stream.js";
import { approvalBox, assistantBlock, keepDecisions, keepExpanded, problemBox, toolCall } from "../transcript.js";
import { listAgents } from "./agents.js";
import { sessionsByRecency } from "./sessions.js";

/** How long a run the server does not know is waited for before it is called unknown: the run
 * resource answers `pending` for any id, since a run may still be queued behind the session's
 * earlier operations. */
export const UNKNOWN_AFTER_MS = 10_000;
/** Sessions (most recent first) and runs shown in the recent runs table. */
const RECENT_SESSIONS = 5;
const RECENT_RUNS = 20;

/** The agent's newest runs: the turns of its most recently active sessions, newest first. */
async function recentRuns(agent, container) {
  const body = h("tbody");
  const table = h("table.list#recent-runs", {},
    h("caption", {}, `Recent runs of ${agent} (newest first)`),
    h("thead", {}, h("tr", {}, ["Run", "Status", "Started", "Session", "Tokens"].map((t) => h("th", { scope: "col" }, t)))),
    body);
  container.append(h("div.table-wrap", {}, table));
  const { sessions } = await sessionsByRecency(agent);
  const details = await Promise.all(sessions.slice(0, RECENT_SESSIONS)
    .map((s) => get(`agents/${seg(agent)}/sessions/${seg(s.session_id)}`).catch(() => null)));
  const runs = details.filter(Boolean)
    .flatMap((session) => session.turns.filter((t) => t.correlation_id).map((t) => ({ ...t, session_id: session.session_id })))
    // Runs in progress first (a queued one has not started, so it has no time), then by start.
    .sort((a, b) => Boolean(b.messages) - Boolean(a.messages)
      || (Date.parse(b.created_at || "") || Infinity) - (Date.parse(a.created_at || "") || Infinity)
      || 0)
    .slice(0, RECENT_RUNS);
  body.replaceChildren(...runs.map((r) => h("tr", {},
    h("th", { scope: "row" }, h("a", { href: `#/runs/${seg(agent)}/${seg(r.session_id)}/${seg(r.correlation_id)}` }, r.correlation_id)),
    h("td", {}, statusBadge(r.queued ? "queued" : r.status)),
    h("td", {}, formatTime(r.created_at)),
    h("td", {}, h("a", { href: `#/sessions/${seg(agent)}/${seg(r.session_id)}` }, r.session_id)),
    h("td", {}, formatUsage(r.usage)))));
  if (!runs.length) body.append(h("tr", {}, h("td", { colspan: "5" }, "No runs yet. Start one in Chat.")));
}

export async function render(main, [agentParam, sessionId, correlationId]) {
  const agents = await listAgents();
  const picker = h("select", { name: "agent" }, agents.map((a) => h("option", { value: a.name }, a.name)));
  const agent = pickAgent(agents, agentParam);
  if (agent) picker.value = agent;
  const session = h("input", { name: "session", required: true, value: sessionId || "", autocomplete: "off" });
  const run = h("input", { name: "run", required: true, value: correlationId || "", autocomplete: "off" });
  const form = h("form.inline-form", {
    onsubmit: (e) => { e.preventDefault(); navigate("runs", picker.value, session.value.trim(), run.value.trim()); },
  }, field("Agent", picker), field("Session id", session), field("Run (correlation id)", run),
  h("div.actions", {}, h("button", { type: "submit" }, "Show run")));
  const area = h("div#run-view", { "aria-live": "polite" });
  main.append(h("h2", {}, "Runs"), form, area);
  if (!agentParam || !sessionId || !correlationId) {
    if (!agent) return null;
    picker.addEventListener("change", () => navigate("runs", picker.value));
    await recentRuns(agent, main);
    return null;
  }

  const controller = new AbortController();
  const path = `agents/${seg(agentParam)}/sessions/${seg(sessionId)}/runs/${seg(correlationId)}`;
  const heading = h("p", {}, "Status: ", h("span#run-status", {}, statusBadge("loading")));
  area.replaceChildren(heading);
  const setStatus = (value) => heading.querySelector("#run-status").replaceChildren(statusBadge(value));

  function showResult(body, live = null) {
    setStatus(body.status);
    const block = assistantBlock(body.response?.messages || [], {});
    if (live) keepDecisions(live, keepExpanded(live, block));
    block.append(h("p.usage", {}, `Tokens: ${formatUsage(body.response?.usage)} · session `,
      h("a", { href: `#/sessions/${seg(agentParam)}/${seg(sessionId)}` }, sessionId)));
    area.replaceChildren(heading, block);
  }
  function showUnknown() {
    setStatus("unknown");
    area.replaceChildren(heading, h("div.problem#run-unknown", { role: "alert" },
      h("strong", {}, "No such run"),
      h("p", {}, `Session ${sessionId} of ${agentParam} has no run ${correlationId} that has started `
        + `(waited ${UNKNOWN_AFTER_MS / 1000} s). Check the id against `, h("a", { href: `#/sessions/${seg(agentParam)}/${seg(sessionId)}` }, "the session's turns"),
      " or the recent runs. A run sent just now can still be queued behind a long turn of the same session: ",
      h("button.link", { type: "button", onclick: () => window.dispatchEvent(new HashChangeEvent("hashchange")) }, "look again"), ".")));
  }
  function showFailure(error) {
    if (error instanceof RunNotFound) { showUnknown(); return; }
    setStatus(error.status === 404 || error.status === 400 ? "unknown" : "failed");
    area.replaceChildren(heading, problemBox(error.problem || { detail: error.message }, "Run failed"));
  }

  let first;
  try {
    first = await get(path);
    if (first.status !== "pending" && first.status !== "awaiting_approval") {
      if (first.status === "failed") showFailure({ problem: { ...first.error, detail: first.error?.message } });
      else showResult(first);
      return null;
    }
  } catch (error) {
    showFailure(error);
    return null;
  }
  // Still running (or waiting for a decision): follow it live.
  setStatus(first.status);
  const live = h("div.msg.assistant.live", { "aria-busy": "true" }, h("div.who", {}, "Agent"));
  const text = h("div.markdown.streaming");
  live.append(text);
  area.append(live);
  const calls = new Map();
  let buffer = "";
  const follow = {
    signal: controller.signal,
    unknownAfterMs: UNKNOWN_AFTER_MS,
    onDelta: (d) => { buffer += d; renderMarkdown(buffer, text); },
    onToolCall: (c) => { const el = toolCall(c); calls.set(c.call_id, el); live.insertBefore(el, text); },
    onToolResult: (r) => calls.get(r.call_id)?.setResult(r.result, r.is_error === true),
    onApproval: (waiting) => {
      setStatus("awaiting_approval");
      for (const call of waiting) {
        if (!live.querySelector(`.approval[data-call-id="${CSS.escape(call.call_id)}"]`)) {
          live.insertBefore(approvalBox(call, { agent: agentParam, sessionId, id: correlationId }), text);
        }
      }
    },
    onRestarted: () => { buffer = ""; calls.forEach((el) => el.remove()); calls.clear(); renderMarkdown("", text); },
  };
  if (first.status === "awaiting_approval") follow.onApproval(waitingCalls(first.approvals));
  followRun({ agent: agentParam, sessionId, correlationId }, follow).then(
    (body) => showResult(body, live),
    (error) => { if (!controller.signal.aborted) showFailure(error); });
  return () => controller.abort();
}
