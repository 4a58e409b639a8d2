// A task's place in a flow and its durable steps, on its page: the parent it belongs to, its children with
// their statuses (GET /tasks/{id}/children) and the steps it stored (GET /tasks/{id}/steps). Those two are
// read when the task changes, and on every refresh only while they may change without it: children while
// one of them has not ended, steps while an attempt runs. So a finished task's page costs one read a
// refresh, as before.
import { html } from './html.mjs';
import { count, prettyJson, Time } from './format.mjs';
import { hrefFor } from './router.mjs';
import { StatusBadge } from './tasks-view.mjs';

export const FINISHED = ['SUCCESS', 'FAILED', 'CANCELLED'];
/** Only a running attempt stores steps. */
const ATTEMPT_RUNS = ['RUNNING', 'CANCEL_REQUESTED'];
/** A step's result or a child's outcome is cut to this many characters in a table cell. */
export const PREVIEW_CHARS = 120;

/** What the page knew of the task when it last read its children and steps: any change reads them again. */
export function taskVersion(task) {
  return [
    task.status,
    task.updatedAt,
    task.attempts,
    task.children?.total ?? 0,
    task.children?.pending ?? 0,
  ].join('|');
}

/**
 * Which of GET /tasks/{id}/children and /steps a refresh reads, given the task it just read and what the
 * page holds from the last reads (`{version, children, steps}`, undefined at first). Children: only a
 * parent's, when the task changed or one held has not ended. Steps: at first, when the task changed, and
 * while an attempt runs.
 */
export function extraReads(task, held) {
  const changed = !held || held.version !== taskVersion(task);
  const parent = (task.children?.total ?? 0) > 0;
  return {
    children:
      parent && (changed || !held.children || held.children.some((c) => !FINISHED.includes(c.status))),
    steps: changed || !held.steps || ATTEMPT_RUNS.includes(task.status),
  };
}

/** Text cut to `max` characters, ending in "…" when cut: `{text, cut}`. */
export function preview(text, max = PREVIEW_CHARS) {
  return text.length > max ? { text: `${text.slice(0, max - 1)}…`, cut: true } : { text, cut: false };
}

/** A JSON value on one line, cut as `preview` cuts text. */
export function jsonPreview(value, max = PREVIEW_CHARS) {
  return preview(value === undefined ? '' : JSON.stringify(value), max);
}

/** A result in a cell: the preview, and when it was cut, the whole of it (pretty) behind a disclosure. */
function JsonCell({ value, label }) {
  const { text, cut } = jsonPreview(value);
  if (!cut) return html`<code class="json-preview">${text}</code>`;
  return html`<details class="json-more">
    <summary><code class="json-preview">${text}</code></summary>
    <pre tabindex="0" aria-label=${label}>${prettyJson(value)}</pre>
  </details>`;
}

/** The parent of a flow's child, linked, as a row of the task's details. */
export function ParentRow({ task }) {
  if (!task.parentId) return '';
  return html`<dt>Parent</dt>
    <dd>
      <a class="task-id" href=${hrefFor('tasks', task.parentId)}>${task.parentId}</a>
      ${task.optional ? html` <span class="badge optional">optional</span> (its failure does not fail the parent)` : ''}
    </dd>`;
}

/** A parent's children: each linked, with its type, status and outcome; undefined `children`: not read yet. */
export function ChildrenSection({ task, children }) {
  if (!task.children) return '';
  const { total, pending } = task.children;
  return html`<section aria-labelledby="children-heading">
    <h2 id="children-heading">Children (${count(pending)} of ${count(total)} pending)</h2>
    ${
      children === undefined
        ? html`<p>Reading children…</p>`
        : children.length === 0
          ? html`<p class="muted">No child written yet.</p>`
          : html`<table class="children">
              <caption class="visually-hidden">
                The children of this task, in the order they were enqueued
              </caption>
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">Type</th>
                  <th scope="col">Status</th>
                  <th scope="col">Result or error</th>
                </tr>
              </thead>
              <tbody>
                ${children.map(
                  (c) =>
                    html`<tr key=${c.id}>
                      <td><a class="task-id" href=${hrefFor('tasks', c.id)}>${c.id}</a></td>
                      <td>${c.type}</td>
                      <td>
                        <${StatusBadge} status=${c.status} />${
                          c.optional ? html` <span class="badge optional">optional</span>` : ''
                        }
                      </td>
                      <td><${ChildOutcome} child=${c} /></td>
                    </tr>`,
                )}
              </tbody>
            </table>`
    }
  </section>`;
}

function ChildOutcome({ child }) {
  if (child.error !== undefined)
    return html`<span class="error-text" title=${preview(child.error, 1000).text}
      >${preview(child.error.split('\n')[0]).text}</span
    >`;
  if (child.resultOmitted) return html`<span class="muted">on its page</span>`;
  if (child.result === undefined) return html`<span class="muted">—</span>`;
  return html`<${JsonCell} value=${child.result} label=${`Result of ${child.id}`} />`;
}

/** The steps the task stored (ctx.step), oldest first; nothing when it stored none. */
export function StepsSection({ steps }) {
  if (!steps || steps.length === 0) return '';
  return html`<section aria-labelledby="steps-heading">
    <h2 id="steps-heading">Steps</h2>
    <table class="steps">
      <caption class="visually-hidden">
        The durable steps this task stored, oldest first: a later attempt replays them
      </caption>
      <thead>
        <tr>
          <th scope="col">Step</th>
          <th scope="col">Stored</th>
          <th scope="col">Result</th>
        </tr>
      </thead>
      <tbody>
        ${steps.map(
          (s) =>
            html`<tr key=${s.name}>
              <th scope="row"><code>${s.name}</code></th>
              <td><${Time} iso=${s.storedAt} /></td>
              <td>
                ${
                  s.resultOmitted
                    ? html`<span class="muted">too large to list here</span>`
                    : html`<${JsonCell} value=${s.result} label=${`Result of step ${s.name}`} />`
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}
