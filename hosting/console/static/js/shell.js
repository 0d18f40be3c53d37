// What every view may use from the page around it: notices, confirmations, navigation.
import { clear, h } from "./dom.js";

const notice = document.getElementById("notice");

/** Show (or with no text, hide) the page-wide notice. */
export function showNotice(text, kind = "error") {
  notice.hidden = !text;
  notice.className = `notice ${kind}`;
  clear(notice);
  if (text) {
    notice.append(h("span", {}, text), " ",
      h("button.link", { type: "button", onclick: () => showNotice("") }, "Dismiss"));
  }
}

const confirmDialog = document.getElementById("confirm-dialog");

/** Ask the person; resolves true for "yes". */
export function confirmAction(title, message, yesLabel = "Yes") {
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-message").textContent = message;
  document.getElementById("confirm-yes").textContent = yesLabel;
  confirmDialog.returnValue = "";
  confirmDialog.showModal();
  return new Promise((resolve) => {
    confirmDialog.addEventListener("close", () => resolve(confirmDialog.returnValue === "yes"), { once: true });
  });
}

export function hashFor(...segments) {
  return `#/${segments.map((s) => encodeURIComponent(s)).join("/")}`;
}

export function navigate(...segments) {
  location.hash = hashFor(...segments);
}

/** Change the address without re-rendering (a chat that just got its session id). */
export function replaceRoute(...segments) {
  history.replaceState(null, "", hashFor(...segments));
}

/** Poll `fn` every `ms` until the returned stop function is called. */
export function every(ms, fn) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    try {
      await fn();
    } finally {
      if (!stopped) timer = setTimeout(tick, ms);
    }
  };
  timer = setTimeout(tick, ms);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

const AGENT_STORAGE = "durable-agents.agent";

/** Remember the agent the person is working with (this tab only), so that the sections they
 * open next (Sessions, Runs, Chat) start on it rather than on the first agent. */
export function rememberAgent(name) {
  try {
    if (name) sessionStorage.setItem(AGENT_STORAGE, name);
  } catch {
    // Storage refused (private mode quota): the views fall back to the first agent.
  }
}

/** The agent named in the address if it is hosted, else the remembered one, else the first. */
export function pickAgent(agents, named) {
  let remembered = "";
  try {
    remembered = sessionStorage.getItem(AGENT_STORAGE) || "";
  } catch {
    remembered = "";
  }
  const hosted = (name) => name && agents.some((a) => a.name === name);
  const agent = hosted(named) ? named : hosted(remembered) ? remembered : agents[0]?.name;
  rememberAgent(agent);
  return agent;
}
