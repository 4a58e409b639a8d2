// The API's own words for a refused or failed call: its `detail`, then one line per bad field.
import { html } from './html.mjs';

export function ProblemMessage({ problem, action }) {
  if (!problem) return null;
  const status = problem.status ? ` (${problem.status}${problem.code ? ` ${problem.code}` : ''})` : '';
  return html`<div class="problem" role="alert">
    <p>
      <strong>${action ? `${action} failed${status}` : `Problem${status}`}:</strong>${' '}
      ${problem.detail ?? String(problem)}
    </p>
    ${
      problem.errors?.length > 0 &&
      html`<ul>
        ${problem.errors.map((e) => html`<li><code>${e.field || '(body)'}</code>: ${e.message}</li>`)}
      </ul>`
    }
  </div>`;
}

/** What an action answered: a short success line, or the problem. */
export function Outcome({ outcome }) {
  if (!outcome) return null;
  if (outcome.problem) return html`<${ProblemMessage} problem=${outcome.problem} action=${outcome.action} />`;
  return html`<p class="done" role="status">${outcome.message}</p>`;
}
