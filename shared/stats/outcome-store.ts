/**
 * The per-minute outcome counters in the table: one item per owner and minute (`STATS#<owner>`, the
 * minute's start; table-layout.ts), one number per task type and outcome, named `<outcome>#<type>` (a
 * type has no `#`). A flush adds to them with `ADD`, so any number of processes write the same minute
 * without reading it; a TTL removes the item a few hours later. A write whose answer is lost after it
 * applied (a deadline, a connection the SDK retries) may count twice: these figures are a dashboard's,
 * and losing counts would be worse than that.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { KEY, statsPartition, statsSortKey, TTL_ATTRIBUTE } from '../table-layout.js';
import { requestPathDeadlineMs, type StoreContext } from '../store/context.js';
import { deadline } from '../store/dynamo.js';
import { readPartitionItems } from '../store/partition-items.js';
import { Expression } from '../store/update-expression.js';
import { emptyCounts, OUTCOMES, type MinuteCounts, type Outcome } from './outcome-counter.js';

/** How long a minute's item is kept: the API reads the last hour; the rest is room for a late flush. */
export const OUTCOME_RETENTION_MS = 3 * 60 * 60_000;

/**
 * Counters one UpdateItem adds at most. An update expression is at most 4 KB, and one counter's clause
 * takes up to about 150 characters (its placeholder spells the attribute name, a type up to 128).
 */
export const COUNTERS_PER_WRITE = 20;

const counterAttribute = (outcome: Outcome, type: string) => `${outcome}#${type}`;
const COUNTER = new RegExp(`^(${OUTCOMES.join('|')})#(.+)$`);

/** A batch cut into pieces of at most COUNTERS_PER_WRITE counters: one UpdateItem each (nearly always one). */
export function writePieces(batch: MinuteCounts): MinuteCounts[] {
  const pieces: MinuteCounts[] = [];
  let piece: MinuteCounts | undefined;
  let counters = 0;
  for (const [type, counts] of Object.entries(batch.types)) {
    const n = OUTCOMES.filter((o) => counts[o] !== 0).length;
    if (n === 0) continue;
    if (!piece || counters + n > COUNTERS_PER_WRITE) {
      pieces.push((piece = { owner: batch.owner, minute: batch.minute, types: {} }));
      counters = 0;
    }
    piece.types[type] = counts;
    counters += n;
  }
  return pieces;
}

/**
 * Adds one piece (writePieces) to its minute's item: one UpdateItem, within the lease path's deadline
 * (a worker's last flush runs in its drain margin, which has room for one such request).
 */
export async function addOutcomes(ctx: StoreContext, piece: MinuteCounts): Promise<void> {
  const e = new Expression().set(TTL_ATTRIBUTE, Math.floor((piece.minute + OUTCOME_RETENTION_MS) / 1000));
  for (const [type, counts] of Object.entries(piece.types))
    for (const outcome of OUTCOMES)
      if (counts[outcome] !== 0) e.add(counterAttribute(outcome, type), counts[outcome]);
  await ctx.doc.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: { [KEY.partition]: statsPartition(piece.owner), [KEY.sort]: statsSortKey(piece.minute) },
      ...e.params(),
    }),
    deadline(ctx.config.requestDeadlineMs),
  );
}

const minuteItemSchema = z.looseObject({ [KEY.sort]: z.string().regex(/^\d{13}$/) });

/**
 * `owner`'s minutes from `from` to `to` (minute starts, both included), oldest first; minutes in which
 * nothing ended have no item. One Query (an hour's items are a few KB), eventually consistent.
 */
export async function readOutcomeMinutes(
  ctx: StoreContext,
  query: { owner: string; from: number; to: number },
): Promise<MinuteCounts[]> {
  if (query.from > query.to) return [];
  const items = await readPartitionItems<Record<string, unknown>>({
    doc: ctx.doc,
    tableName: ctx.tableName,
    partition: statsPartition(query.owner),
    sortBetween: [statsSortKey(query.from), statsSortKey(query.to)],
    deadlineMs: requestPathDeadlineMs(ctx),
  });
  return items.flatMap((item) => minuteOfItem(query.owner, item) ?? []);
}

/** The counts an item holds; undefined for an item that is no minute's (or holds no counter). */
function minuteOfItem(owner: string, item: Record<string, unknown>): MinuteCounts | undefined {
  const parsed = minuteItemSchema.safeParse(item);
  if (!parsed.success) return undefined;
  const types: MinuteCounts['types'] = {};
  for (const [name, value] of Object.entries(item)) {
    const counter = COUNTER.exec(name);
    if (!counter || typeof value !== 'number') continue;
    const type = counter[2]!;
    if (!Object.hasOwn(types, type)) types[type] = emptyCounts();
    types[type]![counter[1] as Outcome] = value;
  }
  if (Object.keys(types).length === 0) return undefined;
  return { owner, minute: Number(parsed.data[KEY.sort]), types };
}
