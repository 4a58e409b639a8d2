// One task: payload, result, error, attempts, times, progress, cost, its parent, children and stored
// steps, and the actions its status allows (cancel; retry, which puts a FAILED or CANCELLED task back
// with a fresh attempt budget). One GET /tasks/{id} a refresh, and its children and steps when they may
// have changed (task-relations.mjs).
import { useRef, useState } from 'preact/hooks';
import { html } from './html.mjs';
import { api } from './api.mjs';
import { useConfirm } from './confirm.mjs';
import { count, duration, prettyJson, Time, timeLeft } from './format.mjs';
import { ProgressBar } from './overview.mjs';
import { Outcome, ProblemMessage } from './problem.mjs';
import { useViewData } from './refresh.mjs';
import { hrefFor } from './router.mjs';
import { StatusBadge } from './tasks-view.mjs';
import {
  ChildrenSection,
  extraReads,
  FINISHED,
  ParentRow,
  StepsSection,
  taskVersion,
} from './task-relations.mjs';
import { ViewHeading } from './view-heading.mjs';

const CANCELLABLE = ['QUEUED', 'RUNNING', 'WAITING_CHILDREN'];
const RETRYABLE = ['FAILED', 'CANCELLED'];

/**
 * The task, and its children and steps: read again only when extraReads says they may have changed, else
 * kept from the last read (of this task: `held` is dropped when the page moves to another).
 */
async function readTask(id, held) {
  const { task } = await api.task(id);
  const last = held.current?.id === id ? held.current : undefined;
  const reads = extraReads(task, last);
  const [children, steps] = await Promise.all([
    !task.children ? undefined : reads.children ? api.children(id).then((a) => a.children) : last.children,
    reads.steps ? api.steps(id).then((a) => a.steps) : last.steps,
  ]);
  held.current = { id, version: taskVersion(task), children, steps };
  return { task, children, steps };
}

export function TaskView({ id, serverTime }) {
  const held = useRef(undefined);
  const { data, problem, reload } = useViewData(() => readTask(id, held), [id]);
  const [outcome, setOutcome] = useState(undefined);
  const confirm = useConfirm();
  const task = data?.task;

  async function act(action) {
    const spec = ACTIONS[action];
    const ok = await confirm({
      title: spec.title,
      body: spec.body(task),
      confirmLabel: spec.label,
      danger: spec.danger,
    });
    if (!ok) return;
    try {
      const { task: after } = await api[action](id);
      setOutcome({ message: spec.done(after) });
      await reload();
    } catch (problem) {
      setOutcome({ problem, action: spec.label });
    }
  }

  return html`<${ViewHeading} title=${`Task ${id}`}>Task <span class="task-id">${id}</span><//>
    <p><a href=${hrefFor('tasks')}>All tasks</a></p>
    <${ProblemMessage} problem=${problem} />
    ${
      task &&
      html`<div class="actions">
          ${
            CANCELLABLE.includes(task.status) &&
            html`<button type="button" class="danger" onClick=${() => act('cancel')}>Cancel task</button>`
          }
          ${
            RETRYABLE.includes(task.status) &&
            html`<button type="button" class="primary" onClick=${() => act('retry')}>Retry task</button>`
          }
        </div>
        <${Outcome} outcome=${outcome} />
        <${TaskDetails}
          task=${task}
          children=${data.children}
          steps=${data.steps}
          now=${serverTime ?? new Date().toISOString()}
        />`
    }`;
}

const ACTIONS = {
  cancel: {
    title: 'Cancel this task?',
    label: 'Cancel task',
    danger: true,
    body: (t) =>
      t.status === 'RUNNING'
        ? `It is running: its worker is told at its next lease renewal, stops the handler and records it as cancelled.`
        : t.status === 'WAITING_CHILDREN'
          ? 'It is waiting for its children: it will not run, and its children that have not ended are cancelled too.'
          : `It is ${t.status}: it will not run.`,
    done: (t) =>
      t.status === 'CANCEL_REQUESTED'
        ? 'Cancel requested: the worker stops it at its next renewal.'
        : `Cancelled: the task is ${t.status}.`,
  },
  retry: {
    title: 'Retry this task?',
    label: 'Retry task',
    danger: false,
    body: (t) => `It goes back to the queue with a fresh budget of ${t.maxAttempts} attempts.`,
    done: (t) => `Queued again: the task is ${t.status}.`,
  },
};

function TaskDetails({ task, children, steps, now }) {
  return html`<dl class="details">
      <dt>Type</dt>
      <dd>${task.type}</dd>
      <dt>Status</dt>
      <dd><${StatusBadge} status=${task.status} /></dd>
      <${ParentRow} task=${task} />
      <dt>Priority</dt>
      <dd>${task.priority}</dd>
      <dt>Attempts</dt>
      <dd>${task.attempts} of ${task.maxAttempts}</dd>
      <dt>Created</dt>
      <dd><${Time} iso=${task.createdAt} /></dd>
      <dt>Due</dt>
      <dd><${Time} iso=${task.availableAt} /></dd>
      <dt>Started</dt>
      <dd><${Time} iso=${task.startedAt} /></dd>
      <dt>Finished</dt>
      <dd><${Time} iso=${task.finishedAt} /></dd>
      <dt>Updated</dt>
      <dd><${Time} iso=${task.updatedAt} /></dd>
      ${
        task.startedAt &&
        task.finishedAt &&
        html`<dt>Ran for</dt>
          <dd>${duration(Date.parse(task.finishedAt) - Date.parse(task.startedAt))} (last attempt)</dd>`
      }
      ${
        task.leaseOwner &&
        html`<dt>Lease</dt>
          <dd>held by <code>${task.leaseOwner}</code>, ${timeLeft(task.leaseUntil, now)} left</dd>`
      }
    </dl>
    <section aria-labelledby="progress-heading">
      <h2 id="progress-heading">Progress</h2>
      <p>
        <${ProgressBar}
          task=${task}
        />${task.progressNote ? html` <span class="note-text">${task.progressNote}</span>` : ''}
      </p>
      <p class="note">
        Only the last progress report and its note are kept: earlier reports are not stored, so there is no
        history to show.
      </p>
    </section>
    <section aria-labelledby="payload-heading">
      <h2 id="payload-heading">Payload</h2>
      ${
        task.payload === undefined
          ? html`<p class="muted">
              No payload${task.payloadBytes ? ` (its ${count(task.payloadBytes)} bytes have expired)` : ''}.
            </p>`
          : html`<pre tabindex="0" aria-label="Payload">${prettyJson(task.payload)}</pre>`
      }
    </section>
    <section aria-labelledby="result-heading">
      <h2 id="result-heading">Result</h2>
      ${
        task.result === undefined
          ? html`<p class="muted">No result${FINISHED.includes(task.status) ? '' : ' yet'}.</p>`
          : html`<pre tabindex="0" aria-label="Result">${prettyJson(task.result)}</pre>`
      }
    </section>
    ${
      task.error &&
      html`<section aria-labelledby="error-heading">
        <h2 id="error-heading">Error</h2>
        <pre tabindex="0" aria-label="Error" class="error">${task.error}</pre>
      </section>`
    }
    <${ChildrenSection} task=${task} children=${children} />
    <${StepsSection} steps=${steps} />
    <${CostTable} cost=${task.cost} />`;
}

function CostTable({ cost }) {
  return html`<section aria-labelledby="cost-heading">
    <h2 id="cost-heading">Cost</h2>
    ${
      !cost
        ? html`<p class="muted">Not recorded for this task.</p>`
        : html`<table class="cost">
            <caption>
              What this task cost so far, all attempts
            </caption>
            <tbody>
              <tr>
                <th scope="row">DynamoDB requests</th>
                <td class="num">${count(cost.requests)}</td>
              </tr>
              <tr>
                <th scope="row">Read units</th>
                <td class="num">${count(cost.readUnits)}</td>
              </tr>
              <tr>
                <th scope="row">Write units</th>
                <td class="num">${count(cost.writeUnits)}</td>
              </tr>
              <tr>
                <th scope="row">Index write units</th>
                <td class="num">${count(cost.indexWriteUnits)}</td>
              </tr>
              <tr>
                <th scope="row">Handler time</th>
                <td class="num">${(cost.handlerMs / 1000).toFixed(3)} s</td>
              </tr>
            </tbody>
          </table>`
    }
  </section>`;
}
