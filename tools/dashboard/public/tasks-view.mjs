// The caller's tasks, newest first, filtered by status and type, a page at a time: one GET /tasks a
// refresh, whatever the number of tasks.
import { html } from './html.mjs';
import { Time } from './format.mjs';
import { ProgressBar } from './overview.mjs';
import { Pager, usePager } from './pager.mjs';
import { ProblemMessage } from './problem.mjs';
import { useViewData } from './refresh.mjs';
import { hrefFor, navigate } from './router.mjs';
import { api } from './api.mjs';
import { ViewHeading } from './view-heading.mjs';

export const STATUSES = [
  'QUEUED',
  'WAITING_CHILDREN',
  'RUNNING',
  'CANCEL_REQUESTED',
  'SUCCESS',
  'FAILED',
  'CANCELLED',
];
/** The statuses whose progress is current (a finished task's last report is on its own page). */
const LEASED = ['RUNNING', 'CANCEL_REQUESTED'];
const PAGE_SIZE = 25;

export function TasksView({ query, taskTypes }) {
  const status = query.get('status') ?? '';
  const type = query.get('type') ?? '';
  const pager = usePager(`${status}|${type}`);
  const { data, problem, loaded } = useViewData(
    () => api.tasks({ status, type, cursor: pager.cursor, limit: PAGE_SIZE }),
    [status, type, pager.cursor],
  );
  const filter = (changes) => navigate(hrefFor('tasks', { status, type, ...changes }));
  const typeNames = [...new Set([...taskTypes.map((t) => t.type), ...(type ? [type] : [])])].sort();
  return html`<${ViewHeading}>Tasks<//>
    <form class="filters" aria-label="Filter tasks" onSubmit=${(e) => e.preventDefault()}>
      <label
        >Status
        <select value=${status} onChange=${(e) => filter({ status: e.currentTarget.value })}>
          <option value="">any</option>
          ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select>
      </label>
      <label
        >Type
        <select value=${type} onChange=${(e) => filter({ type: e.currentTarget.value })}>
          <option value="">any</option>
          ${typeNames.map((t) => html`<option value=${t}>${t}</option>`)}
        </select>
      </label>
    </form>
    <${ProblemMessage} problem=${problem} />
    ${!loaded && html`<p>Reading tasks…</p>`}
    ${
      data &&
      html`<${TaskTable} tasks=${data.tasks} page=${pager.page} />
        <${Pager} pager=${pager} nextCursor=${data.nextCursor} label="Task list" />`
    }`;
}

function TaskTable({ tasks, page }) {
  if (tasks.length === 0) return html`<p>No tasks${page > 1 ? ' on this page' : ''} match.</p>`;
  return html`<table class="tasks">
    <caption class="visually-hidden">
      Your tasks, newest first, page ${page}
    </caption>
    <thead>
      <tr>
        <th scope="col">Task</th>
        <th scope="col">Type</th>
        <th scope="col">Status</th>
        <th scope="col">Attempts</th>
        <th scope="col">Created</th>
        <th scope="col">Updated</th>
        <th scope="col">Progress</th>
      </tr>
    </thead>
    <tbody>
      ${tasks.map(
        (t) =>
          html`<tr key=${t.id}>
            <td><a class="task-id" href=${hrefFor('tasks', t.id)}>${t.id}</a></td>
            <td>${t.type}</td>
            <td><${StatusBadge} status=${t.status} /></td>
            <td>${t.attempts} of ${t.maxAttempts}</td>
            <td><${Time} iso=${t.createdAt} /></td>
            <td><${Time} iso=${t.updatedAt} /></td>
            <td>${LEASED.includes(t.status) ? html`<${ProgressBar} task=${t} />` : ''}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function StatusBadge({ status }) {
  return html`<span class=${`badge ${status}`}>${status}</span>`;
}
