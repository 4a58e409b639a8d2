// The last hour's outcomes per minute, as stacked bars in inline SVG (no chart library, nothing to
// download). For screen readers the SVG is one image with a summary; the same numbers are in a table.
import { html } from './html.mjs';
import { clockTime, count } from './format.mjs';
import { minuteBars, OUTCOMES } from './minutes.mjs';

const WIDTH = 600;
const HEIGHT = 160;
const AXIS = 18;
const BAR_GAP = 2;

const LABELS = {
  succeeded: 'succeeded',
  failed: 'failed',
  retried: 'failed, will retry',
  cancelled: 'cancelled',
};

function summary(bars) {
  const totals = Object.fromEntries(OUTCOMES.map((k) => [k, bars.reduce((sum, b) => sum + b[k], 0)]));
  const finished = totals.succeeded + totals.failed + totals.cancelled;
  const peak = bars.reduce(
    (best, b) => {
      const n = b.succeeded + b.failed + b.cancelled;
      return n > best.n ? { n, at: b.at } : best;
    },
    { n: 0, at: undefined },
  );
  const text =
    `Last hour: ${count(finished)} tasks finished (${count(totals.succeeded)} succeeded, ` +
    `${count(totals.failed)} failed, ${count(totals.cancelled)} cancelled), and ${count(totals.retried)} ` +
    `failed attempts will be retried.`;
  return peak.at ? `${text} Busiest minute: ${clockTime(peak.at)}, ${count(peak.n)} finished.` : text;
}

export function OutcomeChart({ hour }) {
  const bars = minuteBars(hour);
  const peak = Math.max(0, ...bars.map((b) => OUTCOMES.reduce((sum, k) => sum + b[k], 0)));
  const max = Math.max(1, peak);
  const plotHeight = HEIGHT - AXIS;
  const barWidth = WIDTH / bars.length;
  const scale = (n) => (n / max) * (plotHeight - 4);
  const withOutcomes = bars.filter((b) => OUTCOMES.some((k) => b[k] > 0));
  return html`<figure class="chart">
    <figcaption id="chart-caption">Outcomes per minute, last hour</figcaption>
    <ul class="legend" aria-hidden="true">
      ${OUTCOMES.map((k) => html`<li><span class=${`swatch ${k}`}></span>${LABELS[k]}</li>`)}
    </ul>
    <svg
      viewBox=${`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label=${summary(bars)}
      preserveAspectRatio="none"
    >
      <line class="axis" x1="0" y1=${plotHeight} x2=${WIDTH} y2=${plotHeight} />
      ${bars.map((b, i) => {
        let y = plotHeight;
        return html`<g>
          <title>${clockTime(b.at)}: ${OUTCOMES.map((k) => `${b[k]} ${LABELS[k]}`).join(', ')}</title>
          ${OUTCOMES.map((k) => {
            const h = scale(b[k]);
            y -= h;
            return h > 0
              ? html`<rect
                  class=${k}
                  x=${i * barWidth + BAR_GAP / 2}
                  y=${y}
                  width=${barWidth - BAR_GAP}
                  height=${h}
                />`
              : null;
          })}
        </g>`;
      })}
    </svg>
    <div class="axis-labels" aria-hidden="true">
      <span>${clockTime(bars[0].at)}</span
      ><span>${peak ? `top of the scale: ${count(peak)} in a minute` : 'nothing ended in the last hour'}</span
      ><span>${clockTime(bars.at(-1).at)}</span>
    </div>
    <details>
      <summary>The minutes as a table</summary>
      ${
        withOutcomes.length === 0
          ? html`<p>Nothing finished in the last hour.</p>`
          : html`<table>
              <caption>
                Outcomes per minute (minutes in which nothing ended are left out)
              </caption>
              <thead>
                <tr>
                  <th scope="col">Minute</th>
                  ${OUTCOMES.map((k) => html`<th scope="col" class="num">${LABELS[k]}</th>`)}
                </tr>
              </thead>
              <tbody>
                ${withOutcomes.map(
                  (b) =>
                    html`<tr>
                      <th scope="row"><time datetime=${b.at}>${clockTime(b.at)}</time></th>
                      ${OUTCOMES.map((k) => html`<td class="num">${count(b[k])}</td>`)}
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
    </details>
  </figure>`;
}
