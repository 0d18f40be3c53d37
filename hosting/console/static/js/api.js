// The console's only way to the server: the public HTTP API, with the function key the person
// entered (kept in sessionStorage for this tab; the page itself never contains a key).

const KEY_STORAGE = "durable-agents.function-key";

/** The API root: the console is served at {prefix}/console/, the API at {prefix}/. */
export const apiRoot = new URL("../", document.baseURI);

export function apiUrl(path) {
  return new URL(path.replace(/^\//, ""), apiRoot).toString();
}

export function getKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE) || "";
  } catch {
    return "";
  }
}

export function setKey(value) {
  if (value) sessionStorage.setItem(KEY_STORAGE, value);
  else sessionStorage.removeItem(KEY_STORAGE);
}

/** An API answer that is not a success: `problem` is the RFC 9457 document when there is one. */
export class ApiError extends Error {
  constructor(status, problem, message) {
    super(message);
    this.status = status;
    this.problem = problem;
  }
}

const listeners = new Set();

/** Called with the ApiError of every 401, so the page can ask for a key. */
export function onUnauthorized(fn) {
  listeners.add(fn);
}

export function headers(extra = {}) {
  const out = { ...extra };
  const key = getKey();
  if (key) out["x-functions-key"] = key;
  return out;
}

async function problemOf(response) {
  const type = response.headers.get("content-type") || "";
  if (type.includes("json")) {
    try {
      return await response.json();
    } catch {
      return null;
    }
  }
  const text = await response.text().catch(() => "");
  return text ? { detail: text.slice(0, 500) } : null;
}

export function describeStatus(status) {
  if (status === 401) {
    return getKey()
      ? "The function key was refused (401 Unauthorized): it is wrong or has been revoked. Enter a valid key."
      : "This API requires a function key (401 Unauthorized). Enter the app's function key.";
  }
  if (status === 403) return "Access denied (403 Forbidden).";
  return `The server answered ${status}.`;
}

/** Turn a non-2xx answer into an ApiError (and tell the 401 listeners). */
export async function failure(response) {
  const problem = await problemOf(response);
  const message =
    response.status === 401
      ? describeStatus(401)
      : (problem && (problem.detail || problem.title)) || describeStatus(response.status);
  const error = new ApiError(response.status, problem, message);
  if (response.status === 401) listeners.forEach((fn) => fn(error));
  return error;
}

/** fetch() an API path with the key; JSON in and out. Returns {status, body, response}. */
export async function request(method, path, { body, accept = "application/json", headers: extra } = {}) {
  const init = { method, headers: headers({ Accept: accept, ...(extra || {}) }), credentials: "same-origin" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(apiUrl(path), init);
  } catch (error) {
    throw new ApiError(0, null, `The app could not be reached: ${error.message}`);
  }
  if (!response.ok) throw await failure(response);
  const type = response.headers.get("content-type") || "";
  const data = type.includes("json") ? await response.json() : await response.text();
  return { status: response.status, body: data, response };
}

export const get = (path, options) => request("GET", path, options).then((r) => r.body);
export const post = (path, body, options) => request("POST", path, { ...options, body }).then((r) => r.body);
export const del = (path) => request("DELETE", path).then((r) => r.body);

export function seg(value) {
  return encodeURIComponent(value);
}
