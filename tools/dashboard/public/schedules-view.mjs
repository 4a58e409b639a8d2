// The caller's recurring schedules: expression, time zone, next fire, state; enable, disable (the schedule
// PUT again with `enabled` flipped), delete; and for the one opened, its recent fires and missed ticks.
// One GET /schedules a refresh, and one GET /schedules/{name}/fires while one is open.
import { useState } from 'preact/hooks';
import { html } from './html.mjs';
import { api } from './api.mjs';
import { useConfirm } from './confirm.mjs';
import { Time } from './format.mjs';
import { Pager, usePager } from './pager.mjs';
import { Outcome, ProblemMessage } from './problem.mjs';
import { useViewData } from './refresh.mjs';
import { hrefFor, navigate } from './router.mjs';
import { ViewHeading } from './view-heading.mjs';

export function SchedulesView({ selected }) {
  const pager = usePager('schedules');
  const { data, problem, reload } = useViewData(() => api.schedules(pager.cursor), [pager.cursor]);
  const [outcome, setOutcome] = useState(undefined);
  const confirm = useConfirm();

  async function act(schedule, action) {
    const spec = ACTIONS[action];
    const ok = await confirm({
      title: spec.title(schedule.name),
      body: spec.body(schedule),
      confirmLabel: spec.label,
      danger: spec.danger,
    });
    if (!ok) return;
    try {
      if (action === 'delete') await api.deleteSchedule(schedule.name);
      else
        await api.putSchedule(schedule.name, {
          expression: schedule.expression,
          timezone: schedule.timezone,
          task: schedule.task,
          enabled: action === 'enable',
        });
      setOutcome({ message: spec.done(schedule.name) });
      if (action === 'delete' && selected === schedule.name) navigate(hrefFor('schedules'));
      await reload();
    } catch (problem) {
      setOutcome({ problem, action: `${spec.label} ${schedule.name}` });
    }
  }

  return html`<${ViewHeading}>Schedules<//>
    <${ProblemMessage} problem=${problem} />
    <${Outcome} outcome=${outcome} />
    ${
      data &&
      (data.schedules.length === 0 && pager.page === 1
        ? html`<p>
            You have no schedules. Create one with <code>PUT /schedules/{name}</code> (see docs/api.md).
          </p>`
        : html`<${ScheduleTable} schedules=${data.schedules} selected=${selected} act=${act} />
            <${Pager} pager=${pager} nextCursor=${data.nextCursor} label="Schedule list" />`)
    }
    ${selected && html`<${Fires} key=${selected} name=${selected} />`}`;
}

const ACTIONS = {
  enable: {
    title: (name) => `Enable ${name}?`,
    label: 'Enable',
    danger: false,
    body: (s) => `It fires again from its next tick (${s.expression}, ${s.timezone}).`,
    done: (name) => `${name} is enabled.`,
  },
  disable: {
    title: (name) => `Disable ${name}?`,
    label: 'Disable',
    danger: true,
    body: () => 'It stops firing until it is enabled again. Its definition and history stay.',
    done: (name) => `${name} is disabled.`,
  },
  delete: {
    title: (name) => `Delete ${name}?`,
    label: 'Delete',
    danger: true,
    body: () => 'It stops firing and its definition is removed. Tasks it already enqueued stay.',
    done: (name) => `${name} is deleted.`,
  },
};

function stateOf(s) {
  if (s.completedAt) return 'completed';
  return s.enabled ? 'enabled' : 'disabled';
}

function ScheduleTable({ schedules, selected, act }) {
  return html`<table class="schedules">
    <caption class="visually-hidden">
      Your schedules by name
    </caption>
    <thead>
      <tr>
        <th scope="col">Name</th>
        <th scope="col">Expression</th>
        <th scope="col">Time zone</th>
        <th scope="col">Task type</th>
        <th scope="col">State</th>
        <th scope="col">Next fire</th>
        <th scope="col">Sync</th>
        <th scope="col">Actions</th>
      </tr>
    </thead>
    <tbody>
      ${schedules.map(
        (s) =>
          html`<tr key=${s.name} aria-current=${selected === s.name ? 'true' : undefined}>
            <th scope="row"><a href=${hrefFor('schedules', s.name)}>${s.name}</a></th>
            <td><code>${s.expression}</code></td>
            <td>${s.timezone}</td>
            <td>${s.task.type}</td>
            <td><span class=${`badge ${stateOf(s)}`}>${stateOf(s)}</span></td>
            <td>
              ${s.enabled && s.nextFireAt ? html`<${Time} iso=${s.nextFireAt} />` : html`<span class="muted">—</span>`}
            </td>
            <td>${s.sync.state}${s.sync.error ? html`: ${s.sync.error}` : ''}</td>
            <td class="row-actions">
              ${
                !s.completedAt &&
                (s.enabled
                  ? html`<button
                      type="button"
                      onClick=${() => act(s, 'disable')}
                      aria-label=${`Disable ${s.name}`}
                    >
                      Disable
                    </button>`
                  : html`<button
                      type="button"
                      onClick=${() => act(s, 'enable')}
                      aria-label=${`Enable ${s.name}`}
                    >
                      Enable
                    </button>`)
              }
              <button
                type="button"
                class="danger"
                onClick=${() => act(s, 'delete')}
                aria-label=${`Delete ${s.name}`}
              >
                Delete
              </button>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function Fires({ name }) {
  const { data, problem } = useViewData(() => api.fires(name), [name]);
  return html`<section aria-labelledby="fires-heading">
    <h2 id="fires-heading">Fires of ${name}</h2>
    <p><a href=${hrefFor('schedules')}>Close</a></p>
    <${ProblemMessage} problem=${problem} />
    ${
      data &&
      html`${
          data.fires.length === 0
            ? html`<p>No fires yet.</p>`
            : html`<table class="fires">
                <caption>
                  Recent fires, newest first
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Tick</th>
                    <th scope="col">Fired at</th>
                    <th scope="col">Task</th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  ${data.fires.map(
                    (f) =>
                      html`<tr>
                        <td><${Time} iso=${f.scheduledTime} /></td>
                        <td><${Time} iso=${f.firedAt} /></td>
                        <td>
                          ${f.taskId ? html`<a class="task-id" href=${hrefFor('tasks', f.taskId)}>${f.taskId}</a>` : '—'}
                        </td>
                        <td>${f.error ?? ''}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h3>Missed ticks</h3>
        ${
          data.missed.length === 0
            ? html`<p>None: every tick since its last change fired.</p>`
            : html`<ul class="missed">
                ${data.missed.map((t) => html`<li><${Time} iso=${t} /></li>`)}
              </ul>`
        }`
    }
  </section>`;
}
