// One turn over the API: streamed (Server-Sent Events) when the server offers it, otherwise the
// JSON answer (and the run resource's long poll for a 202). The same callbacks fire either way,
// except that a JSON answer has no deltas: its text arrives whole with run.completed.
import { createParser } from "../vendor/eventsource-parser/index.js";
import { ApiError, apiUrl, failure, headers, post, seg } from "./api.js";

const SSE = "text/event-stream";
// What a server without the streaming API answers to a request for it: 406/415 always; 404, 405
// and 501 only when they are not one of the API's own problems (an unknown agent is a 404 too).
const NOT_ACCEPTABLE = new Set([406, 415]);
const NO_ROUTE = new Set([404, 405, 501]);

/** A run id in the server's own format (32 hex digits of a version 4 UUID, as the run route
 * makes one), so every run id the console shows looks alike. getRandomValues, unlike
 * randomUUID, works on plain http:// too. */
export function newRunId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function parseData(text) {
  try {
    return JSON.parse(text);
  } catch {
    return { text };
  }
}

/** Feed an SSE response body to `on` (event name, data, id) until it ends. */
async function readEvents(response, on, signal) {
  const parser = createParser({
    onEvent(event) {
      on(event.event || "message", parseData(event.data), event.id);
    },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      if (signal && signal.aborted) break;
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Consume an event stream: resolves with the run answer of run.completed, rejects with an
 * ApiError for run.failed or run.cancelled (see `isStopped`), or a stream that ends without a
 * terminal event.
 */
async function followStream(response, handlers) {
  let outcome = null;
  await readEvents(
    response,
    (name, data) => {
      switch (name) {
        case "run.started": handlers.onStarted?.(data); break;
        case "text.delta": handlers.onDelta?.(String(data.text ?? "")); break;
        case "tool.call": handlers.onToolCall?.(data); break;
        case "tool.result": handlers.onToolResult?.(data); break;
        case "usage": handlers.onUsage?.(data); break;
        case "run.restarted": handlers.onRestarted?.(data); break;
        case "approval.required": handlers.onApproval?.(waitingCalls(data.approvals)); break;
        case "run.completed": outcome = { ok: true, body: data }; break;
        case "run.failed": outcome = { ok: false, problem: data }; break;
        case "run.cancelled": outcome = { ok: false, problem: data }; break;
        default: break;
      }
    },
    handlers.signal,
  );
  if (outcome === null) {
    throw new ApiError(0, null, "The stream ended before the run finished; open it under Runs to see its outcome.");
  }
  if (!outcome.ok) {
    const problem = outcome.problem || {};
    throw new ApiError(problem.status || 502, problem, problem.detail || problem.title || "The run failed.");
  }
  return outcome.body;
}

/** The calls a run waits on, as {call_id, name, arguments}: from an `approval.required` event
 * (camelCase) or the run resource's `approvals` (snake_case; the decided ones left out). */
export function waitingCalls(approvals) {
  return (approvals || [])
    .filter((a) => !a.decision)
    .map((a) => ({ call_id: a.call_id, name: a.name, arguments: a.arguments }));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The run answer as a failure when the run resource says it failed. */
function settle(body) {
  if (body && body.status === "cancelled") {
    const error = body.error || {};
    const problem = { ...error, code: "run_cancelled", detail: error.message, status: 409 };
    throw new ApiError(409, problem, error.message || "The run was cancelled.");
  }
  if (body && body.status === "failed") {
    const error = body.error || {};
    throw new ApiError(502, { ...error, detail: error.message, status: 502 }, error.message || "The run failed.");
  }
  return body;
}

/** Long-poll a run resource until it has finished. A run awaiting approval answers at once:
 * its calls go to `onApproval` (once per set), and it is read again a second later. */
export async function pollRun(location, handlers = {}) {
  let shown = "";
  for (;;) {
    if (handlers.signal && handlers.signal.aborted) throw new ApiError(0, null, "Stopped.");
    const url = new URL(location, document.baseURI);
    url.searchParams.set("wait", "20");
    const response = await fetch(url, { headers: headers({ Accept: "application/json" }), signal: handlers.signal });
    if (!response.ok) throw await failure(response);
    const body = await response.json();
    if (body.status === "awaiting_approval") {
      const calls = waitingCalls(body.approvals);
      const key = calls.map((c) => c.call_id).join(" ");
      if (key !== shown) handlers.onApproval?.(calls);
      shown = key;
      await sleep(1000);
      continue;
    }
    if (body.status !== "pending") return settle(body);
  }
}

async function jsonAnswer(response, handlers) {
  if (!response.ok) throw await failure(response);
  const body = await response.json();
  handlers.onStarted?.(body);
  if (body.status === "awaiting_approval") handlers.onApproval?.(waitingCalls(body.approvals));
  if (response.status === 202 || body.status === "pending" || body.status === "awaiting_approval") {
    return pollRun(body.location || response.headers.get("location"), handlers);
  }
  return settle(body);
}

/**
 * Send one message. `handlers`: onRunId (the run's id, before it is sent), onStarted, onDelta,
 * onToolCall, onToolResult, onUsage, onRestarted, onMode("stream" | "json"), signal. Resolves with the run answer (RunResultBody);
 * rejects with an ApiError whose `problem` is the failed turn's problem.
 */
export async function runTurn({ agent, sessionId, message }, handlers = {}) {
  const body = { message, correlation_id: newRunId() };
  handlers.onRunId?.(body.correlation_id);
  if (sessionId) body.session_id = sessionId;
  const url = apiUrl(`agents/${seg(agent)}/run`);
  const send = (accept) =>
    fetch(url, {
      method: "POST",
      headers: headers({ Accept: accept, "Content-Type": "application/json" }),
      body: JSON.stringify(body),
      signal: handlers.signal,
    });
  let response;
  try {
    response = await send(`${SSE}, application/json;q=0.5`);
  } catch (error) {
    throw new ApiError(0, null, `The app could not be reached: ${error.message}`);
  }
  const type = response.headers.get("content-type") || "";
  if (response.ok && type.startsWith(SSE)) {
    handlers.onMode?.("stream");
    return followStream(response, handlers);
  }
  handlers.onMode?.("json");
  if (NOT_ACCEPTABLE.has(response.status) || (NO_ROUTE.has(response.status) && !type.includes("problem+json"))) {
    // No streaming here: the same request (same correlation id, so it cannot run twice) as JSON.
    response = await send("application/json");
  }
  return jsonAnswer(response, handlers);
}

/** Decide one call a run waits on: approved or not (with an optional reason); `userId`: the
 * session's owner, when the console acts for one (the Users view). */
export function decideApproval({ agent, sessionId, correlationId, callId, approved, reason, userId }) {
  const body = { call_id: callId, approved };
  if (reason) body.reason = reason;
  const asUser = userId ? `?user_id=${seg(userId)}` : "";
  return post(`agents/${seg(agent)}/sessions/${seg(sessionId)}/runs/${seg(correlationId)}/approvals${asUser}`, body);
}

/** Whether a run's failure is its cancellation (`run_cancelled`: stopped, not failed). */
export function isStopped(error) {
  return error?.problem?.code === "run_cancelled";
}

/** Ask the app to cancel a run (202; the run's own answer then ends `run_cancelled`). */
export function cancelRun({ agent, sessionId, correlationId }) {
  return post(`agents/${seg(agent)}/sessions/${seg(sessionId)}/runs/${seg(correlationId)}/cancel`);
}

/** A run that has not started within the bounded wait: no such run (or not started yet). */
export class RunNotFound extends ApiError {}

/**
 * Follow a run: its live stream when the server has one, else the run resource's long poll.
 * A run the stream does not know (404 `run_not_found`: never sent, or still queued behind the
 * session's earlier operations) is waited for on the run resource for at most `unknownAfterMs`
 * (the run resource itself answers `pending` for any id), then rejected with RunNotFound.
 */
export async function followRun({ agent, sessionId, correlationId }, handlers = {}) {
  const path = `agents/${seg(agent)}/sessions/${seg(sessionId)}/runs/${seg(correlationId)}`;
  const deadline = Date.now() + (handlers.unknownAfterMs ?? Infinity);
  for (;;) {
    const response = await fetch(apiUrl(`${path}/stream`), {
      headers: headers({ Accept: SSE }),
      signal: handlers.signal,
    });
    const type = response.headers.get("content-type") || "";
    if (response.ok && type.startsWith(SSE)) {
      handlers.onMode?.("stream");
      return followStream(response, handlers);
    }
    if (response.status === 401) throw await failure(response);
    const error = response.status === 404 ? await failure(response) : null;
    if (error?.problem?.code !== "run_not_found") {
      // No stream route on this server: the run resource's long poll is all there is.
      handlers.onMode?.("json");
      return pollRun(apiUrl(path), handlers);
    }
    const left = deadline - Date.now();
    if (left <= 0) throw new RunNotFound(404, error.problem, error.message);
    // Not started: the run resource's long poll answers as soon as it ends, then look again.
    const url = new URL(apiUrl(path));
    url.searchParams.set("wait", String(Math.max(1, Math.min(5, Math.ceil(left / 1000)))));
    const polled = await fetch(url, { headers: headers({ Accept: "application/json" }), signal: handlers.signal });
    if (!polled.ok) throw await failure(polled);
    const body = await polled.json();
    if (body.status !== "pending") return settle(body);
  }
}
