// The page's calls to the API: same origin, the API's own routes. Behind `leasehold dashboard` the
// browser sends the session cookie its sign-in link set (HttpOnly: this script never sees it).
// Failures become ApiProblem, holding what the API said (RFC 9457 `detail` and `errors`) to show as is.

/** A refused or failed call: `detail` says what happened, `errors` names each bad field. */
export class ApiProblem extends Error {
  constructor(status, { detail, code, errors, title } = {}) {
    super(detail || `The API answered ${status}.`);
    this.status = status;
    this.code = code;
    this.title = title;
    this.detail = this.message;
    this.errors = Array.isArray(errors) ? errors : [];
  }
}

async function call(method, path, { query, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query ?? {}))
    if (value !== undefined && value !== '') url.searchParams.set(key, String(value));
  const headers = { accept: 'application/json, application/problem+json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(url, {
      method,
      headers,
      cache: 'no-store',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new ApiProblem(0, {
      detail: `The dashboard's server could not be reached (${error.message}). Is it still running?`,
    });
  }
  const text = await res.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (res.ok) return parsed;
  // problem+json from the API (or the dashboard's server); API Gateway's own answers are {message}.
  throw new ApiProblem(res.status, {
    detail: parsed?.detail ?? parsed?.message ?? (text.trim() || `The API answered ${res.status}.`),
    code: parsed?.code,
    title: parsed?.title,
    errors: parsed?.errors,
  });
}

const segment = (value) => encodeURIComponent(value);

export const api = {
  stats: (since) => call('GET', '/stats', { query: { since } }),
  tasks: ({ status, type, cursor, limit }) =>
    call('GET', '/tasks', { query: { status, type, cursor, limit } }),
  task: (id) => call('GET', `/tasks/${segment(id)}`),
  children: (id) => call('GET', `/tasks/${segment(id)}/children`),
  steps: (id) => call('GET', `/tasks/${segment(id)}/steps`),
  cancel: (id) => call('POST', `/tasks/${segment(id)}/cancel`),
  retry: (id) => call('POST', `/tasks/${segment(id)}/retry`),
  enqueue: (body) => call('POST', '/tasks', { body }),
  schedules: (cursor) => call('GET', '/schedules', { query: { cursor } }),
  fires: (name, limit = 20) => call('GET', `/schedules/${segment(name)}/fires`, { query: { limit } }),
  putSchedule: (name, body) => call('PUT', `/schedules/${segment(name)}`, { body }),
  deleteSchedule: (name) => call('DELETE', `/schedules/${segment(name)}`),
  openApi: () => call('GET', '/openapi.json'),
  types: () => call('GET', '/types'),
  pause: (type) => call('POST', `/types/${segment(type)}/pause`),
  resume: (type) => call('POST', `/types/${segment(type)}/resume`),
};
