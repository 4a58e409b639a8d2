/**
 * `leasehold enqueue --file tasks.jsonl`: one task per line, each line the JSON body of POST /tasks
 * (`{"type": ..., "payload"?, "priority"?, "delaySeconds"?, "runAt"?, "maxAttempts"?,
 * "timeoutSeconds"?, "idempotencyKey"?}`). The file is streamed line by line into
 * client.enqueueMany (batches of up to 100, totals only), so a file of any size is never held in
 * memory. A line that is not JSON or not of that shape fails with its line number; the API judges
 * the rest (task type, payload, ranges) and a task it refuses fails with its line number too.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import * as z from 'zod';
import type { BatchTask, BatchTotals, LeaseholdClient } from '../../shared/client/client-types.js';
import { ApiProblemError } from '../../shared/client/errors.js';

/** A line's shape; the API checks the values (the same names as its enqueue body). */
export const taskLineSchema = z
  .object({
    type: z.string(),
    payload: z.unknown().optional(),
    priority: z.number().optional(),
    delaySeconds: z.number().optional(),
    runAt: z.string().optional(),
    maxAttempts: z.number().optional(),
    timeoutSeconds: z.number().optional(),
    idempotencyKey: z.string().optional(),
    group: z.string().optional(),
    debounce: z.object({ key: z.string(), windowMs: z.number() }).strict().optional(),
  })
  .strict();

export interface LineFailure {
  line: number;
  /** The API's problem code, or LINE_NOT_JSON / LINE_INVALID for a line the CLI could not read. */
  code: string;
  message: string;
}

export interface FileProgress {
  /** Lines answered so far (their batches came back), in bytes of the file, and of how many. */
  doneBytes: number;
  totalBytes: number;
  totals: BatchTotals;
  batches: number;
}

export interface FileSummary extends BatchTotals {
  /** In line order; at most `maxFailuresKept`, the rest only counted. */
  failures: LineFailure[];
  failuresNotShown: number;
}

export interface EnqueueFileOptions {
  concurrency?: number;
  onProgress?: (progress: FileProgress) => void;
  /** Failures listed in the summary (a file of millions of bad lines is counted, not listed). */
  maxFailuresKept?: number;
}

/** The task a line asks for, in the client's terms (milliseconds for the API's seconds). */
export function taskOfLine(line: z.output<typeof taskLineSchema>): BatchTask {
  const { type, payload, delaySeconds, timeoutSeconds, ...rest } = line;
  return {
    type,
    ...(payload === undefined ? {} : { payload }),
    options: {
      ...rest,
      ...(delaySeconds === undefined ? {} : { delay: delaySeconds * 1000 }),
      ...(timeoutSeconds === undefined ? {} : { timeout: timeoutSeconds * 1000 }),
    },
  };
}

/** Reads one line: the task, or why not. */
export function readLine(text: string): { task: BatchTask } | { code: string; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { code: 'LINE_NOT_JSON', message: `not JSON (${(error as Error).message})` };
  }
  const parsed = taskLineSchema.safeParse(value);
  if (!parsed.success)
    return {
      code: 'LINE_INVALID',
      message: `not a task: ${parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : 'line'}: ${i.message}`).join('; ')}`,
    };
  return { task: taskOfLine(parsed.data) };
}

export async function enqueueFile(
  client: LeaseholdClient,
  path: string,
  options: EnqueueFileOptions = {},
): Promise<FileSummary> {
  const totalBytes = (await stat(path)).size;
  const maxKept = options.maxFailuresKept ?? 1_000;
  const failures: LineFailure[] = [];
  let failed = 0;
  const fail = (failure: LineFailure) => {
    failed++;
    if (failures.length < maxKept) failures.push(failure);
  };
  // Where each task in flight came from: entries leave as their batch is answered.
  const origin = new Map<number, { line: number; endByte: number }>();
  let doneBytes = 0;
  let batches = 0;

  async function* tasks(): AsyncGenerator<BatchTask> {
    const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });
    let lineNumber = 0;
    let byte = 0;
    let index = 0;
    for await (const text of lines) {
      lineNumber++;
      byte += Buffer.byteLength(text) + 1;
      if (!text.trim()) continue;
      const read = readLine(text);
      if ('code' in read) {
        fail({ line: lineNumber, code: read.code, message: read.message });
        continue;
      }
      origin.set(index++, { line: lineNumber, endByte: byte });
      yield read.task;
    }
  }

  const result = await client.enqueueMany(tasks(), {
    keepOutcomes: false,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    onBatch: (outcomes, totals) => {
      batches++;
      for (const o of outcomes) {
        const from = origin.get(o.index);
        origin.delete(o.index);
        if (!from) continue;
        doneBytes = Math.max(doneBytes, from.endByte);
        if (o.outcome === 'failed') fail({ line: from.line, ...describeFailure(o.error) });
      }
      // The file's unreadable lines count as failed with the API's refusals.
      options.onProgress?.({
        doneBytes: Math.min(doneBytes, totalBytes),
        totalBytes,
        totals: { created: totals.created, existing: totals.existing, failed },
        batches,
      });
    },
  });
  failures.sort((a, b) => a.line - b.line);
  return {
    created: result.created,
    existing: result.existing,
    failed,
    failures,
    failuresNotShown: failed - failures.length,
  };
}

function describeFailure(error: Error): { code: string; message: string } {
  if (!(error instanceof ApiProblemError)) return { code: 'TASK_NOT_SENT', message: error.message };
  const fields = error.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return { code: error.code, message: `${error.message}${fields ? ` (${fields})` : ''}` };
}

/** The summary for people: the counts, then each failure with its line. */
export function fileSummaryText(summary: FileSummary): string {
  return [
    `created ${summary.created}, existing ${summary.existing}, failed ${summary.failed}`,
    ...summary.failures.map((f) => `  line ${f.line}: ${f.code}: ${f.message}`),
    ...(summary.failuresNotShown > 0 ? [`  (and ${summary.failuresNotShown} more failures)`] : []),
  ].join('\n');
}
