// How the page writes times, durations and numbers. Ages and time left are measured against the
// server's clock (the `at` of its last answer), so a browser whose clock is off still shows them right.
import { html } from './html.mjs';

/** 450 -> "450 ms"; 2_345 -> "2.3 s"; 75_000 -> "1 min 15 s"; 3_600_000 -> "1 h 0 min". */
export function duration(ms) {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 10_000) return `${Number((ms / 1000).toFixed(1))} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** A date-time in the reader's zone, to the second, e.g. "2026-11-30 09:44:52". */
export function dateTime(iso) {
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The time of day only, e.g. "09:44". */
export function clockTime(iso, seconds = false) {
  return new Date(iso).toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit',
    ...(seconds ? { second: '2-digit' } : {}),
    hour12: false,
  });
}

/** A <time> with the exact ISO time in `datetime` and as a tooltip. */
export function Time({ iso, children }) {
  if (!iso) return html`<span class="muted">—</span>`;
  return html`<time datetime=${iso} title=${iso}>${children ?? dateTime(iso)}</time>`;
}

/** How long until `iso` (or since, when it has passed), seen from the server's `now`. */
export function timeLeft(iso, now) {
  const ms = Date.parse(iso) - Date.parse(now);
  return ms >= 0 ? duration(ms) : `expired ${duration(-ms)} ago`;
}

export function percent(fraction) {
  return `${Math.round(Math.min(1, Math.max(0, fraction)) * 100)}%`;
}

export const count = (n) => n.toLocaleString('en-US');

export function prettyJson(value) {
  return JSON.stringify(value, null, 2);
}
