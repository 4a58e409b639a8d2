/**
 * What a handler reports through `ctx.progress()`, made fit to store. Reports ride on the worker's
 * renewal round, which carries every lease of the worker at once: one NaN (`done / total` with
 * `total = 0`) once failed the whole round's validation, so no lease of that worker was renewed and
 * innocent tasks ran twice. So every report is made to fit here, at its source,
 * and one that cannot be is refused to the handler that sent it.
 */
import { ValidationError } from '../errors.js';
import { MAX_PROGRESS_NOTE_CHARS } from '../task-inputs.js';

export { MAX_PROGRESS_NOTE_CHARS };

export interface Progress {
  fraction: number;
  note?: string;
}

/**
 * The report to store, or undefined when it says nothing and the last one stands.
 * - NaN (0 of 0 done) is not a position: ignored.
 * - Anything outside 0..1, Infinity included, is clamped.
 * - A longer note is cut to the store's limit, never inside a surrogate pair.
 * - A fraction that is not a number, or a note that is not a string, is a bug in the handler (the
 *   types forbid it): a ValidationError, thrown where the bug is rather than in the renewal round.
 */
export function sanitizeProgress(fraction: unknown, note: unknown): Progress | undefined {
  const problems = [
    ...(typeof fraction === 'number'
      ? []
      : [{ path: 'fraction', message: `must be a number from 0 to 1 (got ${typeof fraction})` }]),
    ...(note === undefined || typeof note === 'string'
      ? []
      : [{ path: 'note', message: `must be a string (got ${typeof note})` }]),
  ];
  if (problems.length > 0) throw new ValidationError('progress', problems);
  if (Number.isNaN(fraction)) return undefined;
  const clamped = Math.min(1, Math.max(0, fraction as number));
  return note === undefined
    ? { fraction: clamped }
    : { fraction: clamped, note: truncateNote(note as string) };
}

function truncateNote(note: string): string {
  if (note.length <= MAX_PROGRESS_NOTE_CHARS) return note;
  const cut = note.slice(0, MAX_PROGRESS_NOTE_CHARS);
  // A high surrogate at the end is half a character: drop it rather than store a broken one.
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}
