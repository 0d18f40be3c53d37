// Workflows: the review workflow's instances with stage and status, and the human approval step.
import { get, post, seg } from "../api.js";
import { field, formatTime, h, json, statusBadge } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { every, navigate, showNotice } from "../shell.js";

const RUNNING = new Set(["Running", "Pending", "ContinuedAsNew", "Suspended"]);

function stageOf(instance) {
  const custom = instance.custom_status;
  return custom && typeof custom === "object" ? custom.stage || "—" : custom || "—";
}

/** The topic the workflow writes about: every custom status and the output carry it. */
function topicOf(instance) {
  for (const part of [instance.custom_status, instance.output]) {
    if (part && typeof part === "object" && typeof part.topic === "string") return part.topic;
  }
  return null;
}

export async function render(main, [instanceId]) {
  main.append(h("h2", {}, "Workflows"));
  const topic = h("input", { name: "topic", required: true, maxlength: "2000", autocomplete: "off" });
  const startForm = h("form.inline-form#start-workflow", {
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const started = await post("workflows/review", { topic: topic.value });
        navigate("workflows", started.instance_id);
      } catch (error) {
        showNotice(error.message);
      }
    },
  }, field("Topic of a new review workflow", topic), h("div.actions", {}, h("button", { type: "submit" }, "Start review")));
  const rows = h("tbody");
  const table = h("table.list#workflows-table", {},
    h("caption", {}, "Review workflow instances (newest first)"),
    h("thead", {}, h("tr", {}, ["Instance", "Topic", "Status", "Stage", "Created", "Updated"].map((t) => h("th", { scope: "col" }, t)))),
    rows);
  const detail = h("section#workflow-detail", { "aria-live": "polite" });
  main.append(startForm, detail, h("div.table-wrap", {}, table));

  async function refreshList() {
    let body;
    try {
      body = await get("workflows/review");
    } catch (error) {
      if (error.status === 404) {
        rows.replaceChildren(h("tr", {}, h("td", { colspan: "6" }, "This app hosts no review workflow.")));
        return;
      }
      throw error;
    }
    rows.replaceChildren(...body.instances.map((i) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: `#/workflows/${seg(i.instance_id)}` }, i.instance_id)),
      h("td.topic", {}, topicOf(i) ?? "—"),
      h("td", {}, statusBadge(i.runtime_status)),
      h("td", {}, stageOf(i)),
      h("td", {}, formatTime(i.created_time)),
      h("td", {}, formatTime(i.last_updated_time)))));
    if (!body.instances.length) rows.append(h("tr", {}, h("td", { colspan: "6" }, "No workflows yet.")));
  }

  let shown = "";
  async function refreshDetail() {
    if (!instanceId) return;
    const instance = await get(`workflows/review/${seg(instanceId)}`);
    const fingerprint = JSON.stringify(instance);
    if (fingerprint === shown) return; // unchanged: keep focus and any comment being typed
    shown = fingerprint;
    const custom = instance.custom_status && typeof instance.custom_status === "object" ? instance.custom_status : {};
    const waiting = RUNNING.has(instance.runtime_status) && custom.stage === "awaiting_approval";
    const parts = [
      h("h3", {}, "Instance ", h("code", {}, instance.instance_id)),
      h("dl.facts.summary", {},
        h("dt", {}, "Topic"), h("dd#workflow-topic", {}, topicOf(instance) ?? "— (not reported yet)"),
        h("dt", {}, "Status"), h("dd#workflow-status", {}, statusBadge(instance.runtime_status)),
        h("dt", {}, "Stage"), h("dd#workflow-stage", {}, stageOf(instance)),
        custom.round && [h("dt", {}, "Round"), h("dd", {}, String(custom.round))],
        typeof custom.reviewer_approved === "boolean" &&
          [h("dt", {}, "Reviewer approved"), h("dd", {}, custom.reviewer_approved ? "yes" : "no")],
        h("dt", {}, "Created"), h("dd", {}, formatTime(instance.created_time)),
        h("dt", {}, "Updated"), h("dd", {}, formatTime(instance.last_updated_time))),
    ];
    const output = instance.output && typeof instance.output === "object" ? instance.output : {};
    if (output.status) {
      parts.push(h("p#workflow-decision", {}, h("strong", {}, "Outcome: "), String(output.status),
        output.comment ? ` — “${output.comment}”` : ""));
    }
    const draft = custom.draft || output.draft;
    if (draft) parts.push(h("h4", {}, "Draft"), renderMarkdown(draft));
    if (custom.feedback) parts.push(h("h4", {}, "Reviewer feedback"), renderMarkdown(custom.feedback));
    if (waiting) parts.push(approvalForm(instance.instance_id));
    if (instance.output !== null && instance.output !== undefined) {
      parts.push(h("h4", {}, "Output"), h("pre.json#workflow-output", { tabindex: "0" }, json(instance.output)));
    }
    parts.push(h("details", {}, h("summary", {}, "Custom status (raw)"), h("pre.json", {}, json(instance.custom_status))));
    detail.replaceChildren(...parts);
  }

  function approvalForm(id) {
    const comment = h("textarea", { name: "comment", rows: "2", maxlength: "4000" });
    const decide = async (approved) => {
      try {
        await post(`workflows/review/${seg(id)}/approval`, { approved, comment: comment.value || null });
        showNotice(approved ? "Approval sent." : "Rejection sent.", "info");
        shown = "";
        await refresh();
      } catch (error) {
        showNotice(error.message);
      }
    };
    return h("form.approval#approval-form", { onsubmit: (e) => e.preventDefault() },
      h("h4", {}, "Waiting for your decision"),
      field("Comment (optional)", comment),
      h("div.actions", {},
        h("button#approve", { type: "button", onclick: () => decide(true) }, "Approve draft"),
        h("button.danger#reject", { type: "button", onclick: () => decide(false) }, "Reject draft")));
  }

  async function refresh() {
    await Promise.all([refreshList(), refreshDetail()]);
  }
  await refresh().catch((error) => {
    detail.replaceChildren(h("div.problem", { role: "alert" }, error.message));
  });
  return every(1500, () => refresh().catch(() => {}));
}
