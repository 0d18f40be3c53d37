// Chat: pick an agent, start or continue a session, watch the answer arrive.
import { ApiError, get, seg } from "../api.js";
import { field, h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { pickAgent, rememberAgent, replaceRoute, showNotice } from "../shell.js";
import { cancelRun, followRun, isStopped, runTurn, waitingCalls } from "../stream.js";
import {
  approvalBox, assistantBlock, historyView, keepDecisions, keepExpanded, problemBox, runLine, toolCall, userBubble,
} from "../transcript.js";
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
  // Said only when the server does not stream (answers then arrive whole); streaming is the norm.
  const modeLabel = h("span.muted#chat-mode", { hidden: true }, "");
  const transcript = h("ol.transcript#transcript", { "aria-label": "Conversation", "aria-live": "polite" });
  const input = h("textarea#message", { name: "message", rows: "3", required: true, placeholder: "Say something…" });
  const send = h("button#send", { type: "submit" }, "Send");
  // Shown while a run is under way, once its session is known: cancels it (the cancel route).
  const stop = h("button.secondary#stop", { type: "button", hidden: true }, "Stop");
  let running = null;
  const status = h("p.muted#chat-status", { role: "status" });

  const header = h("div.chat-head", {},
    field("Agent", picker),
    h("div.session-line", {}, h("span", {}, "Session:"), sessionLabel,
      h("button.secondary#new-session", { type: "button", onclick: () => { replaceRoute("chat", agent); start(null); } }, "New session"),
      h("a#session-details", { href: "#" }, "Details")),
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
      // Runs still in progress (running, awaiting a decision, queued): followed as if just sent.
      for (const turn of session.turns.filter((t) => t.messages)) resume(id, turn);
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

  /** A live answer block and the stream handlers that fill it in; `run`: {agent, sessionId, id}. */
  function liveTurn(turn, run) {
    const block = h("div.msg.assistant.live", { "aria-busy": "true" }, h("div.who", {}, "Agent"));
    const text = h("div.markdown.streaming");
    block.append(text);
    turn.append(block);
    const calls = new Map();
    let buffer = "";
    let pending = false;
    const paint = () => {
      pending = false;
      renderMarkdown(buffer, text);
    };
    const handlers = {
      signal: controller.signal,
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
          if (!block.querySelector(`[data-call-id="${CSS.escape(call.call_id)}"].approval`)) {
            block.insertBefore(approvalBox(call, { ...run }), text);
          }
        }
      },
      onRestarted: () => {
        buffer = "";
        calls.forEach((el) => el.remove());
        calls.clear();
        renderMarkdown("", text);
      },
    };
    return { block, text, handlers };
  }

  /** The finished answer in place of the live block, with its decisions and expanded calls kept. */
  function finish(block, body) {
    const done = assistantBlock(body.response?.messages || [], {});
    done.append(runLine(agent, sessionId, body.correlation_id, body.response?.usage));
    if (body.response?.structured !== undefined && body.response?.structured !== null) {
      done.append(h("details.structured", {}, h("summary", {}, "Structured output"), h("pre", {}, JSON.stringify(body.response.structured, null, 2))));
    }
    block.replaceWith(keepDecisions(block, keepExpanded(block, done)));
  }

  function failed(block, text, error, runId) {
    block.removeAttribute("aria-busy");
    block.classList.remove("live");
    if (isStopped(error)) {
      // What streamed before the stop stays, marked as stopped rather than failed.
      block.classList.add("stopped");
      text.classList.remove("streaming");
      block.append(h("p.stopped-note", { role: "status" }, "Stopped."));
      if (runId) block.append(runLine(agent, sessionId, runId));
    } else {
      text.remove();
      const problem = error.problem || { detail: error.message, status: error.status || undefined };
      block.append(problemBox(problem, error.status === 401 ? "Not authorised" : "The turn failed"));
    }
  }

  /** Follow a run of the reopened session that has not finished (its calls' decisions too). */
  function resume(id, turn) {
    const li = h("li.turn", {}, (turn.messages || []).map((m) => userBubble(m.text, turn.created_at)));
    transcript.append(li);
    const run = { agent, sessionId: id, id: turn.correlation_id };
    const { block, text, handlers } = liveTurn(li, run);
    const waiting = waitingCalls(turn.approvals);
    if (waiting.length) handlers.onApproval(waiting);
    followRun({ agent, sessionId: id, correlationId: turn.correlation_id }, handlers).then(
      (body) => { finish(block, body); status.textContent = ""; },
      (error) => { if (!controller.signal.aborted) failed(block, text, error, turn.correlation_id); },
    );
  }

  async function submit() {
    const message = input.value;
    if (!message.trim() || send.disabled) return;
    send.disabled = true;
    input.value = "";
    status.textContent = "Waiting for the agent…";
    const turn = h("li.turn", {}, userBubble(message));
    transcript.append(turn);
    running = { agent, sessionId, id: null };
    const { block, text, handlers } = liveTurn(turn, running);
    turn.scrollIntoView({ block: "end" });
    stop.disabled = false;
    try {
      const body = await runTurn({ agent, sessionId, message }, {
        ...handlers,
        onRunId: (id) => { running.id = id; stop.hidden = !running.sessionId; },
        onMode: (mode) => {
          modeLabel.textContent = mode === "stream" ? "" : "JSON answers (no streaming on this server)";
          modeLabel.hidden = mode === "stream";
        },
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
      });
      sessionId = body.session_id || sessionId;
      updateSession();
      replaceRoute("chat", agent, sessionId);
      finish(block, body);
      status.textContent = "";
    } catch (error) {
      const problem = error.problem || {};
      if (problem.session_id && !sessionId) {
        sessionId = problem.session_id;
        updateSession();
        replaceRoute("chat", agent, sessionId);
      }
      failed(block, text, error, running.id);
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
