/**
 * Many tasks on a test table, fast. One enqueue costs about 10 ms of dynalite's time (a request per
 * task), so 1,000 take about 10 s; here the store's own enqueue builds each item (captured on a
 * client that sends nothing, so the layout cannot drift from the real one), and the items are written
 * 25 to a BatchWriteItem. Only for fresh ids on a test table: a batch put has no condition.
 */
import { BatchWriteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { EnqueueInput } from '../../shared/task-inputs.js';
import { TaskStore } from '../../shared/store/task-store.js';
import { sequentialIds } from './manual-clock.js';
import type { TestStore } from './test-store.js';

const BATCH = 25;

/** Writes what `enqueue(input)` would for each input (ids `<prefix>-000001`...); returns the ids, in order. */
export async function seedEnqueued(t: TestStore, inputs: EnqueueInput[], prefix = 'seed'): Promise<string[]> {
  const items: Record<string, unknown>[] = [];
  const capturing = {
    send: async (command: unknown) => {
      if (!(command instanceof PutCommand)) throw new Error('seedEnqueued: only an enqueue put is expected');
      items.push(command.input.Item as Record<string, unknown>);
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  const builder = new TaskStore({
    doc: capturing,
    config: t.config,
    clock: t.storeClock,
    newId: sequentialIds(prefix),
  });
  const ids: string[] = [];
  for (const input of inputs) ids.push((await builder.enqueue(input)).task.id);

  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += BATCH) batches.push(items.slice(i, i + BATCH));
  await Promise.all(
    batches.map(async (batch) => {
      let requests = batch.map((Item) => ({ PutRequest: { Item } }));
      for (let tries = 0; requests.length > 0; tries++) {
        if (tries >= 5) throw new Error('seedEnqueued: items left unprocessed after 5 tries');
        const out = await t.doc.send(
          new BatchWriteCommand({ RequestItems: { [t.config.tableName]: requests } }),
        );
        requests = (out.UnprocessedItems?.[t.config.tableName] ?? []) as typeof requests;
      }
    }),
  );
  return ids;
}
