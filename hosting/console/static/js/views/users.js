// Users: what the app keeps for one user (their memory, their sessions across agents), the
// NDJSON export, and the durable erasure with its receipt. Memory text is the user's own words
// (or a model's summary of them): it is inserted as text only, like everything else here.
import { apiUrl, failure, get, headers, request, seg } from "../api.js";
import { field, formatTime, h } from "../dom.js";
import { confirmAction, every, hashFor, navigate, showNotice } from "../shell.js";
import { problemBox } from "../transcript.js";
import { listAgents } from "./agents.js";

/** The route segment for the signed-in user (`/api/me/...`): `@` is outside the id rule
 * ([A-Za-z0-9._~-]), so no user id can be mistaken for it. */
export const ME = "@me";
const PAGE = 20;
/** Most sessions read per agent (the list pages in the backend's order, 100 a page). */
const SESSION_SCAN_LIMIT = 1000;

export async function render(main, [userParam]) {
  const input = h("input#user-id", { name: "user", autocomplete: "off", spellcheck: "false", value: userParam && userParam !== ME ? userParam : "" });
  const form = h("form.inline-form#user-form", {},
    field("User id", input, "The id the app was given as user_id (letters, digits, . _ ~ -)."),
    h("div.actions", {},
      h("button", { type: "submit" }, "Show user"),
      h("button.secondary#show-me", { type: "button", onclick: () => navigate("users", ME) }, "Signed-in user (me)")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) navigate("users", input.value.trim());
  });
  main.append(h("h2", {}, "Users"), form);
  if (!userParam) {
    main.append(h("p.muted", {}, "Enter a user id to see their memory and sessions, export them, or erase them. ",
      "Behind App Service Authentication, “Signed-in user” shows your own."));
    return null;
  }
  const user = userParam === ME ? null : userParam;
  // `users/{id}/...` for a named user, `me/...` for the principal App Service Authentication names.
  const base = user === null ? "me" : `users/${seg(user)}`;
  const label = user === null ? "the signed-in user" : user;
  const stops = [];
  main.append(h("h3", {}, "User ", h("code#user-shown", {}, user === null ? "me" : user)));
  main.append(exportLink(base, user), memoriesSection(base), await sessionsSection(user), erasureSection(base, user, label, stops));
  return () => stops.forEach((stop) => stop());
}

// -- memories ------------------------------------------------------------------------------------

function memoriesSection(base) {
  const q = h("input#memory-query", { name: "q", type: "search", maxlength: "256", autocomplete: "off" });
  const search = h("form.inline-form#memory-search", {}, field("Search memory", q, "Keeps the items holding one of these words."),
    h("div.actions", {}, h("button", { type: "submit" }, "Search")));
  const body = h("tbody");
  const table = h("table.list#memories-table", {},
    h("caption", {}, "Memory (newest first)"),
    h("thead", {}, h("tr", {}, ["Text", "Agent", "Source session", "Created", "Updated", ""].map((t) => h("th", { scope: "col" }, t)))),
    body);
  const more = h("button.secondary#more-memories", { type: "button", hidden: true }, "Load more");
  const empty = h("p.muted#no-memories", { hidden: true }, "No memory items.");
  const status = h("div#memories-status");
  let cursor = null;
  let query = "";
  let listing = 0; // a new search starts a new listing; a late page of an older one is dropped

  async function load(reset) {
    if (reset) { body.replaceChildren(); cursor = null; listing += 1; }
    const mine = listing;
    const params = new URLSearchParams({ limit: String(PAGE) });
    if (cursor) params.set("cursor", cursor);
    if (query) params.set("q", query);
    more.disabled = true;
    try {
      const page = await get(`${base}/memories?${params}`);
      if (mine !== listing) return;
      status.replaceChildren();
      for (const item of page.items) body.append(memoryRow(base, item));
      cursor = page.cursor;
      more.hidden = !cursor;
      empty.hidden = body.children.length > 0;
      table.dataset.loaded = "true";
    } catch (error) {
      status.replaceChildren(problemBox(error.problem || { detail: error.message }, "Could not list the memory"));
    } finally {
      more.disabled = false;
    }
  }
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    query = q.value.trim();
    load(true);
  });
  more.addEventListener("click", () => load(false));
  const section = h("section#user-memories", {}, h("h3", {}, "Memory"), search, status, h("div.table-wrap", {}, table), empty, more);
  section.reload = () => load(true);
  load(true);
  return section;
}

function memoryRow(base, item) {
  const row = h("tr", { dataset: { memoryId: item.id } },
    h("td.memory-text", {}, item.text),
    // `agent` names an agent's own memory; shared memory (null) still records who wrote it.
    h("td", {}, item.agent || [h("span.muted", {}, "shared"), item.metadata?.agent ? ` (from ${item.metadata.agent})` : null]),
    h("td", {}, item.source_session ? h("code", {}, item.source_session) : "—"),
    h("td", {}, formatTime(item.created_at)),
    h("td", {}, formatTime(item.updated_at)),
    h("td", {}, h("button.danger.delete-memory", { type: "button", onclick: remove }, "Delete…")));
  async function remove() {
    const yes = await confirmAction("Delete this memory item?", `“${item.text}” is forgotten: the user's next turns no longer see it.`, "Delete");
    if (!yes) return;
    try {
      await request("DELETE", `${base}/memories/${seg(item.id)}`);
      row.remove();
    } catch (error) {
      showNotice(error.message);
    }
  }
  return row;
}

// -- sessions ------------------------------------------------------------------------------------

/** The user's sessions of one agent: every page of the list filtered by `user_id` (behind App
 * Service Authentication, without it: the list serves the signed-in user's). */
async function sessionsOf(agent, user) {
  const sessions = [];
  let continuation = null;
  do {
    const params = new URLSearchParams({ page_size: "100" });
    if (user !== null) params.set("user_id", user);
    if (continuation) params.set("continuation", continuation);
    const page = await get(`agents/${seg(agent)}/sessions?${params}`);
    // The list also holds the sessions of no one in particular: only the owned ones are the
    // user's (it never holds another user's).
    sessions.push(...page.sessions.filter((s) => s.user_id).map((s) => ({ ...s, agent })));
    continuation = page.continuation;
  } while (continuation && sessions.length < SESSION_SCAN_LIMIT);
  return sessions;
}

async function sessionsSection(user) {
  const section = h("section#user-sessions", {}, h("h3", {}, "Sessions"));
  let sessions;
  try {
    const agents = await listAgents();
    sessions = (await Promise.all(agents.map((a) => sessionsOf(a.name, user)))).flat();
  } catch (error) {
    section.append(problemBox(error.problem || { detail: error.message }, "Could not list the sessions"));
    return section;
  }
  const time = (s) => Date.parse(s.last_operation_time || "") || 0;
  sessions.sort((a, b) => time(b) - time(a));
  if (!sessions.length) {
    section.append(h("p.muted#no-user-sessions", {}, "No sessions of this user."));
    return section;
  }
  // The session view acts for the user named in its address (a session that has an owner answers
  // 404 to anyone else); the signed-in user's are served to the principal as they are.
  const open = (s) => user === null ? hashFor("sessions", s.agent, s.session_id) : hashFor("sessions", s.agent, s.session_id, user);
  section.append(h("div.table-wrap", {}, h("table.list#user-sessions-table", {},
    h("thead", {}, h("tr", {}, ["Agent", "Session", "First message", "Turns", "Last activity"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, sessions.map((s) => h("tr", {},
      h("td", {}, s.agent),
      h("th", { scope: "row" }, h("a", { href: open(s) }, s.session_id)),
      h("td", {}, s.readable ? s.first_message || "—" : h("em", {}, "unreadable state")),
      h("td.num", {}, String(s.turns)),
      h("td", {}, formatTime(s.last_operation_time))))))));
  return section;
}

// -- export --------------------------------------------------------------------------------------

/** The export is fetched with the function key (a plain link could not send the header) and handed
 * to the browser as a file. */
function exportLink(base, user) {
  const name = `${user === null ? "me" : user}.ndjson`;
  const link = h("a.button.secondary#export-link", { href: apiUrl(`${base}/export`), download: name }, "Download export");
  link.addEventListener("click", async (event) => {
    event.preventDefault();
    let response;
    try {
      response = await fetch(apiUrl(`${base}/export`), { headers: headers({ Accept: "application/x-ndjson" }), credentials: "same-origin" });
    } catch (error) {
      showNotice(`The app could not be reached: ${error.message}`);
      return;
    }
    if (!response.ok) {
      showNotice((await failure(response)).message);
      return;
    }
    const url = URL.createObjectURL(await response.blob());
    const save = h("a", { href: url, download: name, hidden: true });
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  });
  return h("div.actions", {}, link, h("span.hint", {}, "NDJSON: the user's memory and sessions, one JSON object a line."));
}

// -- erasure -------------------------------------------------------------------------------------

function erasureSection(base, user, label, stops) {
  const typed = h("input#erase-confirm", { autocomplete: "off", spellcheck: "false" });
  const expected = user === null ? "me" : user;
  const go = h("button.danger#erase-user", { type: "submit", disabled: true }, "Erase for good");
  typed.addEventListener("input", () => { go.disabled = typed.value !== expected; });
  const receipt = h("div#erasure-receipt", { role: "status" });
  const form = h("form.inline-form#erase-form", {},
    field(`Type ${expected} to confirm`, typed, `Erases every session ${label} owns in every agent, with its archived history and run streams, and all of their memory. This cannot be undone.`),
    h("div.actions", {}, go));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (typed.value !== expected) return;
    go.disabled = true;
    try {
      const { body } = await request("DELETE", base);
      showReceipt(receipt, body);
      const stop = every(500, async () => {
        let now;
        try {
          now = await get(`${base}/erasure`);
        } catch (error) {
          showNotice(error.message);
          return; // asked again at the next tick
        }
        showReceipt(receipt, now);
        if (now.status !== "running") {
          stop();
          document.getElementById("user-memories")?.reload();
        }
      });
      stops.push(stop);
    } catch (error) {
      receipt.replaceChildren(problemBox(error.problem || { detail: error.message }, "Could not erase the user"));
      go.disabled = false;
    }
  });
  return h("section#user-erasure", {}, h("h3", {}, "Erase user"), form, receipt);
}

function showReceipt(el, r) {
  // Every hosted agent is counted; the ones the user had no session with say nothing.
  const sessions = Object.entries(r.sessions || {}).filter(([, n]) => n > 0);
  el.replaceChildren(h("dl.facts#receipt", {},
    h("dt", {}, "Status"), h("dd#erasure-status", {}, r.status || "—"),
    h("dt", {}, "Started"), h("dd", {}, formatTime(r.started_at)),
    h("dt", {}, "Finished"), h("dd", {}, formatTime(r.finished_at)),
    h("dt", {}, "Memory items"), h("dd#erased-memories", {}, String(r.memories ?? "—")),
    h("dt", {}, "Sessions"), h("dd#erased-sessions", {}, sessions.length ? sessions.map(([a, n]) => `${a}: ${n}`).join(", ") : "none"),
    h("dt", {}, "Archived chunks"), h("dd", {}, String(r.archived_chunks ?? "—")),
    h("dt", {}, "Stream events"), h("dd", {}, String(r.stream_events ?? "—"))));
}
