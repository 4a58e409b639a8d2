/**
 * Cuts a stream of tasks into the bodies of POST /tasks/batch: at most MAX_BATCH_TASKS tasks and
 * MAX_BODY_BYTES bytes each, read lazily, so an input of any size is never held in memory beyond the
 * batches in flight.
 */
import { MAX_BATCH_TASKS, MAX_BODY_BYTES } from '../api/request-schemas.js';

export interface ChunkLimits {
  maxTasks: number;
  maxBytes: number;
}

export const BATCH_LIMITS: ChunkLimits = { maxTasks: MAX_BATCH_TASKS, maxBytes: MAX_BODY_BYTES };

/** `{"tasks":[` and `]}` around the tasks, which are separated by commas. */
const ENVELOPE_BYTES = Buffer.byteLength('{"tasks":[]}');

/** The bytes a task's JSON takes in a batch body: its own and the comma before it. */
export const batchBytesOf = (json: string): number => Buffer.byteLength(json) + 1;

/** The largest task JSON a batch body can carry (alone). */
export const maxTaskBytes = (limits: ChunkLimits): number => limits.maxBytes - ENVELOPE_BYTES;

/**
 * Groups items into chunks within the limits. `bytesOf` gives an item's size in the body; an item of
 * 0 bytes (one that will not be sent) only counts towards the number of tasks.
 */
export async function* chunksOf<T>(
  items: AsyncIterable<T>,
  bytesOf: (item: T) => number,
  limits: ChunkLimits = BATCH_LIMITS,
): AsyncGenerator<T[]> {
  let chunk: T[] = [];
  let bytes = ENVELOPE_BYTES;
  for await (const item of items) {
    const size = bytesOf(item);
    if (chunk.length > 0 && (chunk.length >= limits.maxTasks || bytes + size > limits.maxBytes)) {
      yield chunk;
      chunk = [];
      bytes = ENVELOPE_BYTES;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}
