/** The benchmark's figures as a Markdown table (printed, and pasted into the README). */
import type { Measure } from './measure.js';

export function formatTable(measures: Measure[]): string {
  const rows = measures.map((m) => [
    m.group,
    m.name,
    `${m.value} ${m.unit}`,
    m.target ? `${m.target.op} ${m.target.value}` : '',
    m.met === undefined ? '' : m.met ? 'met' : 'MISSED',
  ]);
  const header = ['measure', 'figure', 'value', 'target', ''];
  return [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
