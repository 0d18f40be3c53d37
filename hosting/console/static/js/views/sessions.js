// Sessions: an agent's sessions a page at a time, and one session's turns, state bag and size.
import { del, get, post, seg } from "../api.js";
import { field, formatBytes, formatTime, formatUsage, h, json, statusBadge } from "../dom.js";
import { confirmAction, every, navigate, pickAgent, showNotice } from "../shell.js";
import { waitingCalls } from "../stream.js";
import { approvalBox, historyView, problemBox } from "../transcript.js";
import { listAgents } from "./agents.js";

export async function render(main, [agentParam, sessionId, userId]) {
  const agents = await listAgents();
  const agent = pickAgent(agents, agentParam);
  if (!agent) {
    main.append(h("p", {}, "No agents are hosted."));
    return null;
  }
  return sessionId ? renderSession(main, agent, sessionId, userId) : renderList(main, agents, agent);
}

/** Most sessions read to sort them by recency (the backend pages in its own order). */
export const SESSION_SCAN_LIMIT = 1000;

/**
 * An agent's sessions, most recent activity first. The API pages in the backend's order (by key
 * locally, by partition in Azure Storage), so every page is read (up to SESSION_SCAN_LIMIT
 * sessions) before sorting; `more` says whether sessions were left unread.
 */
export async function sessionsByRecency(agent) {
  const sessions = [];
  let continuation = null;
  do {
    const query = new URLSearchParams({ page_size: "100" });
    if (continuation) query.set("continuation", continuation);
    const page = await get(`agents/${seg(agent)}/sessions?${query}`);
    sessions.push(...page.sessions);
    continuation = page.continuation;
  } while (continuation && sessions.length < SESSION_SCAN_LIMIT);
  const time = (s) => Date.parse(s.last_operation_time || "") || 0;
  sessions.sort((a, b) => time(b) - time(a));
  return { sessions, more: Boolean(continuation) };
}

async function renderList(main, agents, agent) {
  const picker = h("select", { name: "agent" }, agents.map((a) => h("option", { value: a.name }, a.name)));
  picker.value = agent;
  picker.addEventListener("change", () => navigate("sessions", picker.value));
  const body = h("tbody");
  const table = h("table.list#sessions-table", {},
    h("caption", {}, `Sessions of ${agent} (most recent activity first)`),
    h("thead", {}, h("tr", {},
      ["Session", "First message", "Turns", "Size", "Last activity"].map((t) => h("th", { scope: "col" }, t)))),
    body);
  const more = h("button.secondary#more-sessions", { type: "button", hidden: true }, "Load more");
  const empty = h("p.muted", { hidden: true }, "No sessions yet. Start one in Chat.");
  main.append(h("h2", {}, "Sessions"), field("Agent", picker), h("div.table-wrap", {}, table), empty, more);

  const PAGE = 20;
  const { sessions, more: unread } = await sessionsByRecency(agent);
  if (unread) {
    table.before(h("p.hint#sessions-unread", {},
      `Only the first ${sessions.length} sessions the backend listed were read and sorted; older or newer ones may be missing.`));
  }
  function showMore() {
    for (const s of sessions.slice(body.children.length, body.children.length + PAGE)) {
      body.append(h("tr", {},
        h("th", { scope: "row" }, h("a", { href: `#/sessions/${seg(agent)}/${seg(s.session_id)}` }, s.session_id)),
        h("td", {}, s.readable ? s.first_message || "—" : h("em", {}, "unreadable state")),
        h("td.num", {}, s.in_progress ? `${s.turns} + ${s.in_progress} in progress` : String(s.turns)),
        h("td.num", {}, formatBytes(s.size_bytes)),
        h("td", {}, formatTime(s.last_operation_time))));
    }
    more.hidden = body.children.length >= sessions.length;
    empty.hidden = sessions.length > 0;
  }
  more.addEventListener("click", showMore);
  showMore();
  return null;
}

/** `userId` (from the Users view): act for the session's owner, which a session that has one needs. */
async function renderSession(main, agent, sessionId, userId) {
  const path = `agents/${seg(agent)}/sessions/${seg(sessionId)}`;
  const asUser = userId ? `?user_id=${seg(userId)}` : "";
  main.append(
    h("p.crumbs", {}, h("a", { href: `#/sessions/${seg(agent)}` }, `Sessions of ${agent}`), " / ", sessionId),
    h("h2", {}, "Session ", h("code", {}, sessionId)));
  const area = h("div#session-view");
  main.append(area);
  let stop = null;

  async function show() {
    let session;
    try {
      session = await get(path + asUser);
    } catch (error) {
      area.replaceChildren(problemBox(error.problem || { detail: error.message }, error.status === 404 ? "No such session" : "Could not read the session"));
      return null;
    }
    const data = session.state?.data || {};
    const history = data.conversationHistory || [];
    const expiry = session.expires_at || session.expiresAt || null;
    const turns = h("tbody", {}, session.turns.map((t, i) => h("tr", { dataset: { run: t.correlation_id || "" } },
      h("td.num", {}, String(i + 1)),
      h("td", {}, t.correlation_id ? h("a", { href: `#/runs/${seg(agent)}/${seg(sessionId)}/${seg(t.correlation_id)}` }, t.correlation_id) : "—"),
      h("td", {}, t.queued ? "queued" : formatTime(t.created_at)),
      h("td", {}, statusBadge(t.queued ? "queued" : t.status)),
      h("td", {}, formatUsage(t.usage)),
      h("td", {}, t.error ? `${t.error.code}: ${t.error.message}` : "—"))));
    const inProgress = session.turns.filter((t) => t.messages).length;
    // The calls runs in progress wait on, decided here as in the chat; the view reads the session
    // again once the run has gone on.
    const decisions = session.turns.filter((t) => t.status === "awaiting_approval").flatMap((t) => {
      const run = { agent, sessionId, id: t.correlation_id, userId };
      const finished = (s) => s && !s.turns.some((u) => u.correlation_id === t.correlation_id && u.messages);
      const boxes = waitingCalls(t.approvals).map((call) => approvalBox(call, run, () => {
        if (boxes.every((b) => b.matches(".approved, .rejected"))) waitFor(finished, "The run goes on");
      }));
      return boxes;
    });
    area.replaceChildren(
      h("dl.facts.summary", {},
        h("dt", {}, "Agent"), h("dd", {}, agent),
        h("dt", {}, "Schema version"), h("dd#schema-version", {}, session.schema_version || "—"),
        h("dt", {}, "Size"), h("dd#session-size", {}, formatBytes(session.size_bytes)),
        h("dt", {}, "Turns"), h("dd#turn-count", {}, inProgress ? `${session.turns.length} (${inProgress} in progress)` : String(session.turns.length)),
        typeof session.archived_entries === "number" && session.archived_entries > 0 && [
          h("dt", {}, "Archived entries"),
          h("dd", {}, `${session.archived_entries} of ${session.entries} (older turns are not listed here)`)],
        h("dt", {}, "Expiry"), h("dd", {}, expiry ? formatTime(expiry) : "none: kept until deleted or reset")),
      h("div.actions", {},
        h("a.button", { href: `#/chat/${seg(agent)}/${seg(sessionId)}` }, "Continue in chat"),
        h("button.secondary#reset-session", { type: "button", onclick: reset }, "Reset…"),
        h("button.danger#delete-session", { type: "button", onclick: remove }, "Delete…")),
      ...(decisions.length ? [h("h3", {}, "Waiting for a decision"),
        h("div.approval-list#session-approvals", {}, decisions)] : []),
      h("h3", {}, "Turns"),
      h("div.table-wrap", {}, h("table.list#turns-table", {},
        h("thead", {}, h("tr", {}, ["#", "Run", "Started", "Status", "Tokens", "Problem"].map((t) => h("th", { scope: "col" }, t)))),
        turns)),
      h("h3", {}, "State bag"),
      h("p.hint", {}, "What the context providers keep for this session (memory facts, history summary)."),
      h("pre.json#state-bag", { tabindex: "0", "aria-label": "State bag" }, json(session.state_bag)),
      h("details", {}, h("summary", {}, "Conversation"), historyView(history, { ...session, agent, session_id: sessionId })),
      h("details", {}, h("summary", {}, "Stored state (raw JSON)"), h("pre.json", { tabindex: "0" }, json(session.state))),
    );
    return session;
  }

  async function waitFor(check, what) {
    if (stop) stop();
    const status = h("p.muted#session-status", { role: "status" }, `${what}…`);
    area.prepend(status);
    stop = every(300, async () => {
      try {
        const session = await get(path + asUser);
        if (check(session)) { stop(); await show(); }
      } catch (error) {
        if (error.status === 404 && check(null)) { stop(); navigate("sessions", agent); }
      }
    });
  }

  async function reset() {
    const yes = await confirmAction("Reset this session?",
      `Session ${sessionId} of ${agent} loses its whole history and state bag. This cannot be undone.`, "Reset");
    if (!yes) return;
    try {
      await post(`${path}/reset${asUser}`);
      await waitFor((s) => s && s.turns.length === 0, "Resetting");
    } catch (error) {
      showNotice(error.message);
    }
  }

  async function remove() {
    const yes = await confirmAction("Delete this session?",
      `Session ${sessionId} of ${agent} is deleted for good, with its history and state bag.`, "Delete");
    if (!yes) return;
    try {
      await del(path + asUser);
      await waitFor((s) => s === null, "Deleting");
    } catch (error) {
      showNotice(error.message);
    }
  }

  await show();
  return () => { if (stop) stop(); };
}
