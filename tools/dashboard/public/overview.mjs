// The overview: counts by type and status, the hour's outcomes, the oldest due task per type, and the
// caller's running tasks with their progress, note, attempt and lease time left. All of it from the one
// GET /stats of each refresh (the App reads it): this view reads nothing of its own.
import { html } from './html.mjs';
import { OutcomeChart } from './chart.mjs';
import { count, duration, percent, Time, timeLeft } from './format.mjs';
import { outcomesByType } from './minutes.mjs';
import { ProblemMessage } from './problem.mjs';
import { hrefFor } from './router.mjs';
import { ViewHeading } from './view-heading.mjs';

export function Overview({ stats, hour, problem, taskTypes }) {
  return html`<${ViewHeading}>Overview<//>
    <${ProblemMessage} problem=${problem} />
    ${
      stats
        ? html`<${TypeTable} stats=${stats} hour=${hour} taskTypes=${taskTypes} />
            <section aria-labelledby="outcomes-heading">
              <h2 id="outcomes-heading">Throughput and failures</h2>
              <${OutcomeChart} hour=${hour} />
            </section>
            <${RunningTasks} stats=${stats} />`
        : !problem && html`<p>Reading the queue…</p>`
    }`;
}

function TypeTable({ stats, hour, taskTypes }) {
  const queue = stats.queue;
  const waiting = new Map((queue?.types ?? []).map((t) => [t.type, t]));
  const outcomes = outcomesByType(hour);
  const running = {};
  for (const t of stats.running) running[t.type] = (running[t.type] ?? 0) + 1;
  const types = [
    ...new Set([
      ...taskTypes.map((t) => t.type),
      ...waiting.keys(),
      ...Object.keys(running),
      ...Object.keys(outcomes),
    ]),
  ].sort();
  const cell = (n) => html`<td class="num">${n ? count(n) : html`<span class="muted">0</span>`}</td>`;
  return html`<section aria-labelledby="types-heading">
    <h2 id="types-heading">By type and status</h2>
    <table class="types">
      <caption>
        Waiting and oldest due: the whole queue, every caller's, as recovery last counted it
        ${queue ? html` (<${Time} iso=${queue.at} />, once a minute)` : ' (not counted yet)'}. Running and the
        last hour: your tasks.
      </caption>
      <thead>
        <tr>
          <th scope="col">Type</th>
          <th scope="col" class="num">Waiting</th>
          <th scope="col">Oldest due task waiting for</th>
          <th scope="col" class="num">Running</th>
          <th scope="col" class="num">Succeeded (1 h)</th>
          <th scope="col" class="num">Failed (1 h)</th>
          <th scope="col" class="num">Retried (1 h)</th>
          <th scope="col" class="num">Cancelled (1 h)</th>
        </tr>
      </thead>
      <tbody>
        ${types.map((type) => {
          const q = waiting.get(type);
          const o = outcomes[type] ?? {};
          return html`<tr>
            <th scope="row"><a href=${hrefFor('tasks', { type })}>${type}</a></th>
            <td class="num">
              ${q ? `${q.estimated ? '≈' : ''}${count(q.ready)}` : html`<span class="muted">0</span>`}
            </td>
            <td>
              ${q?.oldestDueAt ? duration(Date.parse(stats.at) - Date.parse(q.oldestDueAt)) : html`<span class="muted">—</span>`}
            </td>
            ${cell(running[type])} ${cell(o.succeeded)} ${cell(o.failed)} ${cell(o.retried)}
            ${cell(o.cancelled)}
          </tr>`;
        })}
      </tbody>
    </table>
    ${
      queue &&
      html`<p class="totals">
        Under a lease: <strong>${count(queue.leased)}</strong>. Delayed (waiting for their time):${' '}
        <strong>${count(queue.delayed)}</strong>${
          queue.nextDueAt ? html`, the next due in ${timeLeft(queue.nextDueAt, stats.at)}` : ''
        }.
      </p>`
    }
  </section>`;
}

function RunningTasks({ stats }) {
  return html`<section aria-labelledby="running-heading">
    <h2 id="running-heading">Running now</h2>
    ${
      !stats.runningComplete &&
      html`<p class="note">
        More tasks hold leases than one answer reads: some of yours may be missing here.
      </p>`
    }
    ${
      stats.running.length === 0
        ? html`<p>None of your tasks is running.</p>`
        : html`<table class="running">
            <caption class="visually-hidden">
              Your running tasks, lease ending soonest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Type</th>
                <th scope="col">Progress</th>
                <th scope="col">Note</th>
                <th scope="col">Attempt</th>
                <th scope="col">Lease left</th>
              </tr>
            </thead>
            <tbody>
              ${stats.running.map(
                (t) =>
                  html`<tr>
                    <td>
                      <a href=${hrefFor('tasks', t.id)} class="task-id">${t.id}</a
                      >${t.status === 'CANCEL_REQUESTED' ? html` <span class="badge CANCEL_REQUESTED">cancel requested</span>` : ''}
                    </td>
                    <td>${t.type}</td>
                    <td><${ProgressBar} task=${t} /></td>
                    <td>${t.progressNote ?? html`<span class="muted">—</span>`}</td>
                    <td>${t.attempts} of ${t.maxAttempts}</td>
                    <td>${t.leaseUntil ? timeLeft(t.leaseUntil, stats.at) : '—'}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

export function ProgressBar({ task }) {
  if (task.progress === undefined) return html`<span class="muted">not reported</span>`;
  return html`<span class="progress">
    <progress max="1" value=${task.progress} aria-label=${`Progress of ${task.id}`}>
      ${percent(task.progress)}
    </progress>
    <span aria-hidden="true">${percent(task.progress)}</span>
  </span>`;
}
