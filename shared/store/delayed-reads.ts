/**
 * The delayed tasks (and retries after backoff) due before a time: the timekeeper's read. One
 * eventually consistent query per delay partition, all sixteen at once, keys only. A stale index
 * read only delays a promotion to the next read; the promotion itself is conditioned on the task
 * still waiting in that partition and being due.
 */
import { delaySweepPartition, SHARD_COUNT, taskIdFromPk } from '../table-layout.js';
import type { StoreContext } from './context.js';
import { deadline } from './dynamo.js';
import { entryAt, sweepPage } from './sweep-page.js';

export interface DueTask {
  id: string;
  dueAt: number;
}

/** One query page: 1 MB of keys-only entries is about 10,000 of them. */
const PAGE_LIMIT = 1_000;

/** Up to `limit` delayed tasks due at or before `before` (spread over the partitions), earliest first per partition. */
export async function dueDelayed(
  ctx: StoreContext,
  input: { before: number; limit: number },
): Promise<DueTask[]> {
  const perPartition = Math.max(1, Math.ceil(input.limit / SHARD_COUNT));
  const pages = await Promise.all(
    Array.from({ length: SHARD_COUNT }, async (_, shard) => {
      const partition = delaySweepPartition(shard);
      const found: DueTask[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await sweepPage(
          ctx,
          {
            partition,
            bound: input.before,
            limit: Math.min(PAGE_LIMIT, perPartition - found.length),
            startKey,
          },
          deadline(ctx.config.requestDeadlineMs),
        );
        for (const entry of page.entries)
          found.push({ id: taskIdFromPk(entry.pk), dueAt: entryAt(entry, partition) });
        startKey = page.next;
      } while (startKey && found.length < perPartition);
      return found;
    }),
  );
  // Each partition was asked for its share rounded up: at most `limit` in all, earliest first.
  return pages
    .flat()
    .sort((a, b) => a.dueAt - b.dueAt)
    .slice(0, input.limit);
}
