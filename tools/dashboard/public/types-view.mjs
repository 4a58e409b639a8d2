// Task types: each one paused or not, with its waiting, running and delayed tasks (every caller's), and
// a button to pause or resume it. One GET /types a refresh. Pause and resume are an operator's routes:
// in AWS a caller without the construct's grantOperate gets API Gateway's 403, shown as it is.
import { useState } from 'preact/hooks';
import { html } from './html.mjs';
import { api } from './api.mjs';
import { useConfirm } from './confirm.mjs';
import { count, Time } from './format.mjs';
import { Outcome, ProblemMessage } from './problem.mjs';
import { useViewData } from './refresh.mjs';
import { hrefFor } from './router.mjs';
import { ViewHeading } from './view-heading.mjs';

export function TypesView() {
  const { data, problem, loaded, reload } = useViewData(() => api.types(), []);
  const [outcome, setOutcome] = useState(undefined);
  const confirm = useConfirm();

  async function toggle(type) {
    const action = type.paused ? 'resume' : 'pause';
    const spec = ACTIONS[action];
    const ok = await confirm({
      title: spec.title(type.type),
      body: spec.body,
      confirmLabel: spec.label,
      danger: spec.danger,
    });
    if (!ok) return;
    try {
      const answer = await api[action](type.type);
      setOutcome({ message: spec.done(answer) });
      await reload();
    } catch (problem) {
      setOutcome({ problem, action: spec.label });
    }
  }

  return html`<${ViewHeading}>Task types<//>
    <${ProblemMessage} problem=${problem} />
    <${Outcome} outcome=${outcome} />
    ${!loaded && html`<p>Reading the types…</p>`}
    ${data && html`<${TypeRows} answer=${data} onToggle=${toggle} />`}`;
}

function TypeRows({ answer, onToggle }) {
  if (answer.types.length === 0) return html`<p>This deployment defines no task types.</p>`;
  return html`<table class="types">
    <caption>
      Every caller's tasks. Waiting: as recovery last counted it
      ${answer.waitingAt ? html` (<${Time} iso=${answer.waitingAt} />, once a minute)` : ' (not counted yet)'}.
      ${answer.estimated ? ' ≈: estimated from a sample of a deep queue.' : ''}
    </caption>
    <thead>
      <tr>
        <th scope="col">Type</th>
        <th scope="col">State</th>
        <th scope="col" class="num">Waiting</th>
        <th scope="col" class="num">Running</th>
        <th scope="col" class="num">Delayed</th>
        <th scope="col">Changed</th>
        <th scope="col"><span class="visually-hidden">Action</span></th>
      </tr>
    </thead>
    <tbody>
      ${answer.types.map(
        (t) =>
          html`<tr key=${t.type} data-type=${t.type}>
            <th scope="row"><a href=${hrefFor('tasks', { type: t.type })}>${t.type}</a></th>
            <td>
              <span class=${`badge ${t.paused ? 'PAUSED' : 'ACTIVE'}`}
                >${t.paused ? 'paused' : 'active'}</span
              >
            </td>
            <td class="num">${count(t.waiting)}</td>
            <td class="num">${count(t.running)}</td>
            <td class="num">${count(t.delayed)}</td>
            <td>
              ${t.changedAt ? html`<${Time} iso=${t.changedAt} />${t.changedBy ? ` by ${t.changedBy}` : ''}` : html`<span class="muted">—</span>`}
            </td>
            <td>
              <button
                type="button"
                class=${t.paused ? 'primary' : 'danger'}
                aria-label=${`${t.paused ? 'Resume' : 'Pause'} ${t.type}`}
                onClick=${() => onToggle(t)}
              >
                ${t.paused ? 'Resume' : 'Pause'}
              </button>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

const ACTIONS = {
  pause: {
    title: (type) => `Pause ${type}?`,
    label: 'Pause type',
    danger: true,
    body: 'No task of this type is claimed until it is resumed, for every caller. New tasks are still enqueued and wait; running ones finish.',
    done: (a) => `Paused ${a.type.type}: workers see it within ${count(a.takesEffectWithinMs)} ms.`,
  },
  resume: {
    title: (type) => `Resume ${type}?`,
    label: 'Resume type',
    danger: false,
    body: 'Its waiting tasks are claimed again.',
    done: (a) => `Resumed ${a.type.type}: its waiting tasks are claimed again.`,
  },
};
