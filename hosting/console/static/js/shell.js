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
