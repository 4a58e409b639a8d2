/**
 * The worker function's event, read leniently: the scheduled tick's (`leasehold.worker`), a kick,
 * a scale-up or a hand-over (worker-invoker.ts), or anything else someone invokes it with. A hint
 * that does not parse is dropped, never an error: the invocation still claims as usual.
 */
import * as z from 'zod';
import { SHARD_COUNT } from '../table-layout.js';
import { type StartHints } from './worker-invoker.js';
import { TUNING } from '../tuning.js';

const taskType = z.string().min(1).max(128);
const taskId = z.string().min(1).max(128);
const readySk = z.string().min(1).max(256);
const shard = z
  .number()
  .int()
  .min(0)
  .max(SHARD_COUNT - 1);

const offeredTask = z.object({ taskId, type: taskType, shard, readySk });

const startEvent = z.object({
  source: z.string().max(64).optional(),
  lookFirst: z
    .object({
      type: taskType,
      shard,
      taskId: taskId.optional().catch(undefined),
      readySk: readySk.optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
  offers: z.array(offeredTask).max(TUNING.kick.maxOffers).optional().catch(undefined),
  readAll: z.boolean().optional().catch(undefined),
  expectWorkAt: z.number().int().positive().optional().catch(undefined),
  keepTime: z.boolean().optional().catch(undefined),
  seat: z
    .object({
      index: z.number().int().min(0).max(100_000),
      holder: z.string().min(1).max(128),
      token: z.number().int().positive(),
    })
    .optional()
    .catch(undefined),
  generation: z.number().int().min(0).max(1_000_000_000).optional().catch(undefined),
});

export function workerStartEvent(event: unknown): { source: string; hints: StartHints } {
  const parsed = startEvent.safeParse(event);
  if (!parsed.success) return { source: 'unknown', hints: {} };
  const { lookFirst, offers, readAll, expectWorkAt, keepTime, seat, generation } = parsed.data;
  return {
    source: parsed.data.source ?? 'unknown',
    hints: {
      ...(lookFirst ? { lookFirst } : {}),
      ...(offers?.length ? { offers } : {}),
      ...(readAll ? { readAll } : {}),
      ...(expectWorkAt ? { expectWorkAt } : {}),
      ...(keepTime ? { keepTime } : {}),
      ...(seat ? { seat } : {}),
      ...(generation ? { generation } : {}),
    },
  };
}
