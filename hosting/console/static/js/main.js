// The console's shell: hash routes to views, the function-key dialog, notices, confirmations.
import { getKey, onUnauthorized, setKey } from "./api.js";
import { clear, h } from "./dom.js";
import { showNotice } from "./shell.js";
import * as agents from "./views/agents.js";
import * as chat from "./views/chat.js";
import * as runs from "./views/runs.js";
import * as sessions from "./views/sessions.js";
import * as users from "./views/users.js";
import * as workflows from "./views/workflows.js";

const ROUTES = { agents, chat, sessions, runs, workflows, users };
const main = document.getElementById("main");
let cleanup = null;

// -- function key ------------------------------------------------------------------------------

const keyDialog = document.getElementById("key-dialog");
const keyInput = document.getElementById("key-input");
const keyMessage = document.getElementById("key-message");
const DEFAULT_KEY_MESSAGE = keyMessage.textContent;

function askForKey(message) {
  keyMessage.textContent = message || DEFAULT_KEY_MESSAGE;
  keyInput.value = "";
  keyDialog.returnValue = "";
  if (!keyDialog.open) keyDialog.showModal();
  keyInput.focus();
}

keyDialog.addEventListener("close", () => {
  if (keyDialog.returnValue === "save" && keyInput.value.trim()) {
    setKey(keyInput.value.trim());
    showNotice("");
    route();
  } else if (keyDialog.returnValue === "forget") {
    setKey("");
    route();
  }
  keyInput.value = "";
  updateKeyButton();
});

function updateKeyButton() {
  document.getElementById("key-button").textContent = getKey() ? "Function key ✓" : "Function key";
}

document.getElementById("key-button").addEventListener("click", () => askForKey());

onUnauthorized((error) => {
  showNotice(error.message);
  askForKey(error.message);
});

// -- routing ------------------------------------------------------------------------------------

/** Parts of the hash route: "#/chat/assistant/s1" -> ["chat", "assistant", "s1"]; null when a part
 * is not valid %-escaped UTF-8 (a hand-edited or truncated link), which names no view. */
function parts() {
  try {
    return location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  } catch (error) {
    if (error instanceof URIError) return null;
    throw error;
  }
}

/** The view for an address the console has no view for. */
const notFound = {
  render(container) {
    container.append(
      h("h2", {}, "Page not found"),
      h("p#not-found", {}, "The console has no view at this address. ", h("a", { href: "#/agents" }, "Show the agents")),
    );
  },
};

async function route() {
  const [section = "agents", ...rest] = parts() || ["not-found"];
  const view = Object.hasOwn(ROUTES, section) ? ROUTES[section] : notFound;
  if (typeof cleanup === "function") cleanup();
  cleanup = null;
  for (const link of document.querySelectorAll("nav a[data-section]")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  clear(main);
  try {
    cleanup = await view.render(main, rest);
  } catch (error) {
    main.append(h("div.problem", { role: "alert" }, h("strong", {}, "Could not show this view"), h("p", {}, error.message)));
  }
}

window.addEventListener("hashchange", route);
updateKeyButton();
route();
