// A conversation as a list: the person's messages, the agent's answers (markdown, sanitized),
// tool calls with their arguments and results (expandable), and failed turns with their problem.
import { formatTime, formatUsage, h, json } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { decideApproval } from "./stream.js";

function short(value, limit = 80) {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? {});
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

/** Arguments as sent: the stream carries the model's JSON text, the stored state an object. */
function parsedArguments(args) {
  if (typeof args !== "string") return args ?? {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** An expandable tool call; `setResult` fills in its result when it arrives. */
export function toolCall({ call_id: callId, name, arguments: raw, server }) {
  const args = parsedArguments(raw);
  const result = h("pre.result", { "aria-label": "Result" }, "waiting for the result…");
  // A tool of an MCP server is named with its server; the stored turn names it on the result.
  const origin = h("span.tool-server", {}, server ? ` · MCP server ${server}` : "");
  const el = h(
    "details.tool",
    { dataset: { callId: callId || "" } },
    h("summary", {}, h("span.tool-label", {}, "Tool call "), h("code.tool-name", {}, name || "?"),
      h("span.tool-args", {}, `(${short(args)})`), origin),
    h("div.tool-body", {},
      h("h4", {}, "Arguments"), h("pre.arguments", {}, typeof args === "string" ? args : json(args)),
      h("h4", {}, "Result"), result),
  );
  el.setResult = (value, isError = false, from = null) => {
    if (from && !server) origin.textContent = ` · MCP server ${from}`;
    result.textContent = typeof value === "string" ? value : json(value);
    el.classList.add(isError ? "failed" : "done");
  };
  return el;
}

/**
 * Keeps the tool calls a reader expanded while the turn streamed expanded in the block that
 * replaces the live one when the turn ends; otherwise they would snap shut under the reader.
 */
export function keepExpanded(from, to) {
  const open = new Set([...from.querySelectorAll("details.tool[open]")].map((el) => el.dataset.callId));
  for (const el of to.querySelectorAll("details.tool")) {
    if (open.has(el.dataset.callId)) el.open = true;
  }
  return to;
}

/** The problem of a failed turn: code, message, whether retrying may help. */
export function problemBox(problem, heading = "The turn failed") {
  const p = problem || {};
  const retry = p.retryable === undefined ? null : p.retryable ? "yes" : "no";
  return h(
    "div.problem",
    { role: "alert" },
    h("strong", {}, heading),
    h("dl", {},
      h("dt", {}, "Code"), h("dd", {}, h("code", {}, p.code || "unknown")),
      h("dt", {}, "Message"), h("dd", {}, p.detail || p.message || p.title || "—"),
      retry !== null && [h("dt", {}, "Retryable"), h("dd", {}, retry)],
      p.status && [h("dt", {}, "HTTP status"), h("dd", {}, String(p.status))],
    ),
  );
}

export function userBubble(text, time) {
  return h("div.msg.user", {},
    h("div.who", {}, "You", time ? h("time", { datetime: time }, ` · ${formatTime(time)}`) : null),
    h("div.text", {}, text));
}

/** The agent's part of a turn from stored/answered messages (wire format). */
export function assistantBlock(messages, { failure, time } = {}) {
  const block = h("div.msg.assistant", {},
    h("div.who", {}, "Agent", time ? h("time", { datetime: time }, ` · ${formatTime(time)}`) : null));
  const calls = new Map();
  let text = "";
  for (const message of messages || []) {
    for (const content of message.contents || []) {
      const type = content.$type;
      if (type === "functionCall") {
        const el = toolCall({ call_id: content.callId, name: content.name, arguments: content.arguments });
        calls.set(content.callId, el);
        block.append(el);
      } else if (type === "functionResult") {
        const el = calls.get(content.callId);
        if (el) el.setResult(content.result, content.isError === true, content.server || null);
      } else if (type === "text" && message.role !== "tool") {
        text += (text ? "\n\n" : "") + String(content.text ?? "");
      }
    }
  }
  if (text && !failure) block.append(renderMarkdown(text));
  if (failure) block.append(problemBox(failure));
  return block;
}

/** The text of a request entry's messages. */
export function requestText(entry) {
  return (entry.messages || [])
    .flatMap((m) => (m.contents || []).filter((c) => c.$type === "text").map((c) => c.text))
    .join("\n");
}

/** The line under an answer: its tokens and a link to its run (as the chat shows a new turn). */
export function runLine(agent, sessionId, correlationId, usage) {
  return h("p.usage", {}, `Tokens: ${formatUsage(usage)}`,
    correlationId ? [" · run ", h("a", { href: `#/runs/${encodeURIComponent(agent)}/${encodeURIComponent(sessionId)}/${encodeURIComponent(correlationId)}` }, correlationId)] : null);
}

/**
 * A stored history (state.data.conversationHistory) as turns. With `session` (the answer of
 * GET .../sessions/{id}: its `agent`, `session_id` and `turns`), each answer gets its tokens and
 * its run link, as it had when it was sent.
 */
export function historyView(entries, session = null) {
  const list = h("ol.transcript", { "aria-label": "Conversation" });
  const turns = new Map((session?.turns || []).filter((t) => t.correlation_id).map((t) => [t.correlation_id, t]));
  for (const entry of entries || []) {
    if (entry.$type === "request") {
      list.append(h("li.turn", {}, userBubble(requestText(entry), entry.createdAt)));
    } else if (entry.$type === "response") {
      const last = list.lastElementChild || list.appendChild(h("li.turn"));
      const block = assistantBlock(entry.messages, { failure: entry.failure, time: entry.createdAt });
      const turn = turns.get(entry.correlationId);
      for (const approval of turn?.approvals || []) {
        if (approval.decision) placeDecision(decidedBox(approval), block);
      }
      if (session && entry.correlationId) {
        block.append(runLine(session.agent, session.session_id, entry.correlationId, turn?.usage ?? entry.usage));
      }
      last.append(block);
    }
  }
  return list;
}

/** What was decided, as the box shows it once the decision is taken. */
function decisionText(approved, reason) {
  if (approved) return reason ? `Approved: ${reason}` : "Approved.";
  return reason ? `Rejected: ${reason}` : "Rejected.";
}

/**
 * One tool call waiting for a decision: its tool and arguments, Approve and Reject (with an
 * optional reason). `run`: {agent, sessionId, id, userId}. The run goes on by itself once every
 * call of its step is decided; `onDecided` is told of each decision taken.
 */
export function approvalBox(call, run, onDecided = null) {
  const reason = h("input.approval-reason", { type: "text", name: "reason", placeholder: "Reason (optional)", "aria-label": "Reason" });
  const outcome = h("p.approval-outcome", { role: "status" });
  const approve = h("button.approve", { type: "button" }, "Approve");
  const reject = h("button.secondary.reject", { type: "button" }, "Reject");
  const box = h("div.approval", { "data-call-id": call.call_id },
    h("p", {}, "Approve ", h("code", {}, call.name), "?"),
    h("pre.approval-arguments", {}, json(parsedArguments(call.arguments))),
    h("div.actions", {}, approve, reject, reason), outcome);
  const decide = async (approved) => {
    approve.disabled = reject.disabled = reason.disabled = true;
    const why = reason.value.trim();
    // Shown as decided before the answer comes back: the run can go on, and end, before the
    // decision's own response reaches the page, and the finished answer keeps decided boxes.
    const decided = approved ? "approved" : "rejected";
    outcome.textContent = decisionText(approved, why);
    box.classList.add(decided);
    try {
      await decideApproval({ agent: run.agent, sessionId: run.sessionId, correlationId: run.id, callId: call.call_id, approved, reason: why, userId: run.userId });
      onDecided?.(approved);
    } catch (error) {
      box.classList.remove(decided);
      outcome.textContent = `The decision was not taken: ${error.message}`;
      approve.disabled = reject.disabled = reason.disabled = false;
    }
  };
  approve.addEventListener("click", () => decide(true));
  reject.addEventListener("click", () => decide(false));
  return box;
}

/**
 * Keeps the decisions taken while the turn ran in the block that replaces the live one when it
 * ends: each decided box, without its buttons, just before its tool call (or at the top).
 */
export function keepDecisions(from, to) {
  for (const box of from.querySelectorAll(".approval.approved, .approval.rejected")) {
    box.querySelector(".actions")?.remove();
    placeDecision(box, to);
  }
  return to;
}

/** A decided box in an answer: just before its tool call (or at the top). */
function placeDecision(box, block) {
  const call = block.querySelector(`details.tool[data-call-id="${CSS.escape(box.dataset.callId || "")}"]`);
  if (call) call.before(box);
  else block.querySelector(".who")?.after(box);
}

/** A call decided in a finished run, as its stored approval shows it (a reopened conversation). */
function decidedBox(approval) {
  const { approved, reason } = approval.decision;
  return h(`div.approval.${approved ? "approved" : "rejected"}`, { "data-call-id": approval.call_id },
    h("p", {}, approved ? "Approved " : "Rejected ", h("code", {}, approval.name)),
    h("pre.approval-arguments", {}, json(parsedArguments(approval.arguments))),
    h("p.approval-outcome", { role: "status" }, decisionText(approved, reason || "")));
}
