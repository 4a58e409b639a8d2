/**
 * The progress of `enqueue --file` on stderr: a bar redrawn in place on a terminal; elsewhere (a log,
 * CI) a plain line every few batches, so the log shows progress without a line per batch.
 */
import type { FileProgress } from './enqueue-file.js';
import { progressBar } from './format.js';

/** Batches between two plain lines when stderr is not a terminal (1,000 tasks at 100 a batch). */
export const PLAIN_EVERY_BATCHES = 10;

export function progressLine(p: FileProgress): string {
  const { created, existing, failed } = p.totals;
  const fraction = p.totalBytes === 0 ? 1 : p.doneBytes / p.totalBytes;
  return `${progressBar(fraction)} ${created + existing + failed} tasks: created ${created}, existing ${existing}, failed ${failed}`;
}

export function fileProgressReporter(stream: Pick<NodeJS.WriteStream, 'write' | 'isTTY'>): {
  update(p: FileProgress): void;
  finish(): void;
} {
  let drawn = false;
  return {
    update(p) {
      if (stream.isTTY) {
        stream.write(`\r\x1b[2K${progressLine(p)}`);
        drawn = true;
      } else if (p.batches % PLAIN_EVERY_BATCHES === 0) stream.write(`${progressLine(p)}\n`);
    },
    finish() {
      if (drawn) stream.write('\n');
    },
  };
}
