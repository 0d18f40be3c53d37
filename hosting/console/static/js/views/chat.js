// Chat: pick an agent, start or continue a session, watch the answer arrive.
import { ApiError, get, seg } from "../api.js";
import { field, h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { pickAgent, rememberAgent, replaceRoute, showNotice } from "../shell.js";
import { cancelRun, decideApproval, isStopped, runTurn } from "../stream.js";
import { assistantBlock, historyView, keepExpanded, problemBox, runLine, toolCall, userBubble } from "../transcript.js";
import { listAgents } from "./agents.js";

export async function render(main, [agentParam, sessionParam]) {
  const agents = await listAgents();
  if (!agents.length) {
    main.append(h("p", {}, "No agents are hosted."));
    return null;
  }
  let agent = pickAgent(agents, agentParam);
  let sessionId = sessionParam || null;
  const controller = new AbortController();

  const picker = h("select", { name: "agent" }, agents.map((a) => h("option", { value: a.name }, a.name)));
  picker.value = agent;
  const sessionLabel = h("code#session-id", {}, sessionId || "new session");
  const modeLabel = h("span.muted#chat-mode", {}, "");
  const transcript = h("ol.transcript#transcript", { "aria-label": "Conversation", "aria-live": "polite" });
  const input = h("textarea#message", { name: "message", rows: "3", required: true, placeholder: "Say something…" });
  const send = h("button#send", { type: "submit" }, "Send");
  // Shown while a run is under way, once its session is known: cancels it (the cancel route).
  const stop = h("button.secondary#stop", { type: "button", hidden: true }, "Stop");
  let running = null;
  const status = h("p.muted#chat-status", { role: "status" });

  const header = h("div.chat-head", {},
    field("Agent", picker),
    h("div.session-line", {}, h("span", {}, "Session: "), sessionLabel, " ",
      h("button.secondary#new-session", { type: "button", onclick: () => { replaceRoute("chat", agent); start(null); } }, "New session"),
      " ", h("a#session-details", { href: "#" }, "Details")),
    modeLabel);
  const composer = h("form.composer", { onsubmit: (e) => { e.preventDefault(); submit(); } },
    field("Message", input, "Enter sends; Shift+Enter starts a new line."), h("div.actions", {}, send, " ", stop), status);
  stop.addEventListener("click", async () => {
    if (!running || !running.sessionId || stop.disabled) return;
    stop.disabled = true;
    status.textContent = "Stopping…";
    try {
      await cancelRun({ agent: running.agent, sessionId: running.sessionId, correlationId: running.id });
    } catch (error) {
      stop.disabled = false;
      showNotice(`The run could not be stopped: ${error.message}`);
    }
  });
  main.append(h("h2", {}, "Chat"), header, transcript, composer);

  function updateSession() {
    sessionLabel.textContent = sessionId || "new session";
    const details = main.querySelector("#session-details");
    details.hidden = !sessionId;
    if (sessionId) details.setAttribute("href", `#/sessions/${seg(agent)}/${seg(sessionId)}`);
  }

  async function start(id) {
    sessionId = id;
    transcript.replaceChildren();
    updateSession();
    if (!id) return;
    try {
      const session = await get(`agents/${seg(agent)}/sessions/${seg(id)}`);
      const history = historyView(session.state?.data?.conversationHistory || [], { ...session, agent, session_id: id });
      transcript.replaceChildren(...history.children);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        status.textContent = `Session ${id} does not exist yet; your first message starts it.`;
      } else {
        showNotice(error.message);
      }
    }
  }

  picker.addEventListener("change", () => {
    agent = picker.value;
    rememberAgent(agent);
    replaceRoute("chat", agent);
    start(null);
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      composer.requestSubmit();
    }
  });

  async function submit() {
    const message = input.value;
    if (!message.trim() || send.disabled) return;
    send.disabled = true;
    input.value = "";
    status.textContent = "Waiting for the agent…";
    const turn = h("li.turn", {}, userBubble(message));
    const block = h("div.msg.assistant.live", { "aria-busy": "true" }, h("div.who", {}, "Agent"));
    const text = h("div.markdown.streaming");
    block.append(text);
    turn.append(block);
    transcript.append(turn);
    turn.scrollIntoView({ block: "end" });
    const calls = new Map();
    running = { agent, sessionId, id: null };
    stop.disabled = false;
    let buffer = "";
    let pending = false;
    const paint = () => {
      pending = false;
      renderMarkdown(buffer, text);
    };
    try {
      const body = await runTurn({ agent, sessionId, message }, {
        signal: controller.signal,
        onRunId: (id) => { running.id = id; stop.hidden = !running.sessionId; },
        onMode: (mode) => { modeLabel.textContent = mode === "stream" ? "streaming" : "JSON answers (no streaming on this server)"; },
        onStarted: (info) => {
          if (info && info.session_id) {
            running.sessionId = info.session_id;
            stop.hidden = false;
          }
          if (info && info.session_id && info.session_id !== sessionId) {
            sessionId = info.session_id;
            updateSession();
            replaceRoute("chat", agent, sessionId);
          }
        },
        onDelta: (delta) => {
          buffer += delta;
          if (!pending) { pending = true; requestAnimationFrame(paint); }
        },
        onToolCall: (call) => {
          const el = toolCall(call);
          calls.set(call.call_id, el);
          block.insertBefore(el, text);
        },
        onToolResult: (result) => calls.get(result.call_id)?.setResult(result.result, result.is_error === true),
        onApproval: (waiting) => {
          status.textContent = "Waiting for your decision…";
          for (const call of waiting) {
            if (!block.querySelector(`[data-call-id="${CSS.escape(call.call_id)}"]`)) {
              block.insertBefore(approvalBox(call, { ...running }), text);
            }
          }
        },
        onRestarted: () => {
          buffer = "";
          calls.forEach((el) => el.remove());
          calls.clear();
          renderMarkdown("", text);
        },
      });
      sessionId = body.session_id || sessionId;
      updateSession();
      replaceRoute("chat", agent, sessionId);
      const done = assistantBlock(body.response?.messages || [], {});
      done.append(runLine(agent, sessionId, body.correlation_id, body.response?.usage));
      if (body.response?.structured !== undefined && body.response?.structured !== null) {
        done.append(h("details.structured", {}, h("summary", {}, "Structured output"), h("pre", {}, JSON.stringify(body.response.structured, null, 2))));
      }
      block.replaceWith(keepExpanded(block, done));
      status.textContent = "";
    } catch (error) {
      const problem = error.problem || { detail: error.message, status: error.status || undefined };
      if (problem.session_id && !sessionId) {
        sessionId = problem.session_id;
        updateSession();
        replaceRoute("chat", agent, sessionId);
      }
      block.removeAttribute("aria-busy");
      block.classList.remove("live");
      if (isStopped(error)) {
        // What streamed before the stop stays, marked as stopped rather than failed.
        block.classList.add("stopped");
        text.classList.remove("streaming");
        block.append(h("p.stopped-note", { role: "status" }, "Stopped."));
        if (running.id) block.append(runLine(agent, sessionId, running.id));
      } else {
        text.remove();
        block.append(problemBox(problem, error.status === 401 ? "Not authorised" : "The turn failed"));
      }
      status.textContent = "";
    } finally {
      running = null;
      stop.hidden = true;
      send.disabled = false;
      input.focus();
    }
  }

  await start(sessionId);
  input.focus();
  return () => controller.abort();
}

/** One tool call waiting for a decision: its tool and arguments, Approve and Reject (with an
 * optional reason). The run goes on by itself once every call of its step is decided. */
function approvalBox(call, run) {
  const reason = h("input.approval-reason", { type: "text", name: "reason", placeholder: "Reason (optional)", "aria-label": "Reason" });
  const outcome = h("p.approval-outcome", { role: "status" });
  const approve = h("button.approve", { type: "button" }, "Approve");
  const reject = h("button.secondary.reject", { type: "button" }, "Reject");
  const box = h("div.approval", { "data-call-id": call.call_id },
    h("p", {}, "Approve ", h("code", {}, call.name), "?"),
    h("pre.approval-arguments", {}, JSON.stringify(call.arguments, null, 2)),
    h("div.actions", {}, approve, " ", reject, " ", reason), outcome);
  const decide = async (approved) => {
    approve.disabled = reject.disabled = reason.disabled = true;
    try {
      await decideApproval({ agent: run.agent, sessionId: run.sessionId, correlationId: run.id, callId: call.call_id, approved, reason: reason.value.trim() });
      outcome.textContent = approved ? "Approved." : "Rejected.";
      box.classList.add(approved ? "approved" : "rejected");
    } catch (error) {
      outcome.textContent = `The decision was not taken: ${error.message}`;
      approve.disabled = reject.disabled = reason.disabled = false;
    }
  };
  approve.addEventListener("click", () => decide(true));
  reject.addEventListener("click", () => decide(false));
  return box;
}
