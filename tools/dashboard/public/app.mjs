// The dashboard: a header (who the page acts as, what it is connected to, when it last refreshed), the
// views, and the refresh loop that reads GET /stats plus the open view's data every few seconds.
import { render } from 'preact';
import { useCallback, useRef, useState } from 'preact/hooks';
import { html } from './html.mjs';
import { api } from './api.mjs';
import { ConfirmProvider } from './confirm.mjs';
import { clockTime, duration } from './format.mjs';
import { mergeMinutes, sinceFor } from './minutes.mjs';
import { EnqueueView } from './enqueue-view.mjs';
import { Overview } from './overview.mjs';
import { pollIntervalMs, RefreshContext, useRefreshLoop } from './refresh.mjs';
import { hrefFor, useRoute } from './router.mjs';
import { SchedulesView } from './schedules-view.mjs';
import { TaskView } from './task-view.mjs';
import { TasksView } from './tasks-view.mjs';
import { TypesView } from './types-view.mjs';
import { useTaskTypes } from './task-types.mjs';
import { ViewHeading } from './view-heading.mjs';

const apiLabel = document.querySelector('meta[name="leasehold-api"]')?.getAttribute('content') ?? '';
const intervalMs = pollIntervalMs();

const NAV = [
  { href: '#/', label: 'Overview', view: '' },
  { href: '#/tasks', label: 'Tasks', view: 'tasks' },
  { href: '#/types', label: 'Types', view: 'types' },
  { href: '#/enqueue', label: 'Enqueue', view: 'enqueue' },
  { href: '#/schedules', label: 'Schedules', view: 'schedules' },
];

function App() {
  const route = useRoute();
  const taskTypes = useTaskTypes();
  const held = useRef(undefined);
  const [overview, setOverview] = useState({
    stats: undefined,
    hour: { at: new Date().toISOString(), minutes: [] },
  });
  const readStats = useCallback(async () => {
    const since = sinceFor(held.current);
    try {
      const stats = await api.stats(since);
      held.current = mergeMinutes(held.current, since, stats);
      setOverview({ stats, hour: held.current, problem: undefined });
    } catch (problem) {
      setOverview((o) => ({ ...o, problem }));
    }
  }, []);
  const { refreshNow, status, registry } = useRefreshLoop(readStats, intervalMs);
  const [view, ...rest] = route.parts;
  return html`<${RefreshContext.Provider} value=${registry}>
    <${ConfirmProvider}>
      <a class="skip" href="#/" onClick=${skipToContent}>Skip to content</a>
      <header class="top">
        <p class="brand">Leasehold</p>
        <nav aria-label="Views">
          <ul>
            ${NAV.map(
              (n) =>
                html`<li>
                  <a href=${n.href} aria-current=${(view ?? '') === n.view ? 'page' : undefined}
                    >${n.label}</a
                  >
                </li>`,
            )}
          </ul>
        </nav>
        <dl class="who">
          <div>
            <dt>Acting as</dt>
            <dd class="owner">${overview.stats?.owner ?? '…'}</dd>
          </div>
          <div>
            <dt>API</dt>
            <dd>${apiLabel}</dd>
          </div>
        </dl>
        <p class="refresh" data-refreshes=${status.count}>
          ${refreshText(status.at)}${' '}<button type="button" onClick=${refreshNow}>Refresh now</button>
        </p>
      </header>
      <main id="main" tabindex="-1">${viewFor(view, rest, route.query, overview, taskTypes)}</main>
    <//>
  <//>`;
}

function refreshText(at) {
  return `${at ? `Updated ${clockTime(at.toISOString(), true)}` : 'Reading…'}, every ${duration(intervalMs)}`;
}

function viewFor(view, rest, query, overview, taskTypes) {
  switch (view) {
    case undefined:
      return html`<${Overview} ...${overview} taskTypes=${taskTypes.types} />`;
    case 'tasks':
      return rest.length === 0
        ? html`<${TasksView} query=${query} taskTypes=${taskTypes.types} />`
        : html`<${TaskView} key=${rest[0]} id=${rest[0]} serverTime=${overview.stats?.at} />`;
    case 'enqueue':
      return html`<${EnqueueView}
        taskTypes=${taskTypes.types}
        typesProblem=${taskTypes.problem}
        query=${query}
      />`;
    case 'schedules':
      return html`<${SchedulesView} selected=${rest[0]} />`;
    case 'types':
      return html`<${TypesView} />`;
    default:
      return html`<${ViewHeading}>Not found<//>
        <p>There is no view "${view}". <a href=${hrefFor()}>Open the overview</a>.</p>`;
  }
}

function skipToContent(event) {
  event.preventDefault();
  document.getElementById('main').focus();
}

const root = document.getElementById('app');
root.replaceChildren(); // the "Loading…" line: render() adds to what is there
render(html`<${App} />`, root);
