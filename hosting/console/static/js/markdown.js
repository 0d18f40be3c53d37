// Markdown from models and tools, rendered and then sanitized: no script runs and nothing is
// loaded from anywhere (the page's CSP says the same, as a second line of defence).
import { marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.es.mjs";

marked.setOptions({ gfm: true, breaks: true, async: false });

const FORBID_TAGS = [
  "style", "form", "input", "button", "textarea", "select", "option", "iframe", "frame", "object",
  "embed", "video", "audio", "source", "track", "picture", "link", "meta", "base", "svg", "math",
];

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") || "";
    if (!/^(https?:|mailto:|#)/i.test(href)) node.removeAttribute("href");
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  if (node.tagName === "IMG") {
    // Only inline data: images are shown; any other source would be a request to another
    // host (a tracking pixel at best), so it becomes visible text instead.
    const src = node.getAttribute("src") || "";
    node.removeAttribute("srcset");
    if (!/^data:image\/(png|gif|jpeg|webp);/i.test(src)) {
      node.removeAttribute("src");
      node.setAttribute("data-blocked-src", src.slice(0, 300));
    }
  }
});

const CONFIG = {
  USE_PROFILES: { html: true },
  FORBID_TAGS,
  FORBID_ATTR: ["style", "srcset", "ping", "background", "poster", "formaction"],
  ALLOW_DATA_ATTR: false,
  ADD_ATTR: ["target"],
};

/** A <div class="markdown"> holding the sanitized rendering of `text`. */
export function renderMarkdown(text, into) {
  const container = into || document.createElement("div");
  container.classList.add("markdown");
  const html = marked.parse(String(text ?? ""));
  // A TrustedHTML value where the browser enforces Trusted Types (the page's CSP asks for it).
  container.innerHTML = DOMPurify.sanitize(html, { ...CONFIG, RETURN_TRUSTED_TYPE: true });
  for (const img of container.querySelectorAll("img[data-blocked-src]")) {
    const note = document.createElement("span");
    note.className = "blocked-image";
    const alt = img.getAttribute("alt");
    note.textContent = `[image not loaded${alt ? `: ${alt}` : ""} — ${img.getAttribute("data-blocked-src") || "no source"}]`;
    img.replaceWith(note);
  }
  return container;
}
