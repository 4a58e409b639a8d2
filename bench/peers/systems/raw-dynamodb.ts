/**
 * The floor for DynamoDB: no framework, the fewest requests a claim can take. The producer puts a task
 * item into the ready index (the same table layout and dynalite as Leasehold); the consumer queries the
 * index head, claims each head with a conditional update (QUEUED to RUNNING, leaving the index), calls
 * the handler, and marks it done. Found nothing: it waits, either for the producer's in-process wake
 * (`woken`, possible only when both share a process) or for its poll interval (`poll`).
 */
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { INDEX } from '../../../shared/table-layout.js';
import { benchTable } from '../../bench-runtime.js';
import type { OpenSystem, PeerSystem } from '../types.js';

export type RawWait = { kind: 'woken' } | { kind: 'poll'; intervalMs: number };

/** The ready index projects keys only, so the task number travels in the key. */
const keyOf = (n: number) => `RAW#${n}`;
const numberOf = (pk: string) => Number(pk.slice('RAW#'.length));

/** All raw tasks share one ready partition: one query finds the head. */
const PARTITION = 'raw';

export function rawDynamo(endpoint: string, wait: RawWait, concurrency: number): OpenSystem {
  return async (started) => {
    const table = await benchTable(endpoint, 'peers-raw');
    const { doc, client, config } = table.runtime();
    const TableName = config.tableName;
    let stopped = false;
    // A count, not a flag: a wake that lands while a query is in flight must not be lost.
    let wakes = 0;
    let wakeUp: (() => void) | undefined;
    const wake = () => {
      wakes++;
      wakeUp?.();
    };
    const idle = (seen: number) =>
      new Promise<void>((resolve) => {
        if (stopped || (wait.kind === 'woken' && wakes !== seen)) return resolve();
        wakeUp = resolve;
        if (wait.kind === 'poll') setTimeout(resolve, wait.intervalMs);
      }).finally(() => (wakeUp = undefined));

    const claimAndRun = async (pk: string, n: number) => {
      const Key = { pk, sk: 'TASK' };
      try {
        await doc.send(
          new UpdateCommand({
            TableName,
            Key,
            UpdateExpression: 'SET #s = :running REMOVE #rp, #rs',
            ConditionExpression: '#s = :queued',
            ExpressionAttributeNames: {
              '#s': 'status',
              '#rp': INDEX.ready.partition,
              '#rs': INDEX.ready.sort,
            },
            ExpressionAttributeValues: { ':running': 'RUNNING', ':queued': 'QUEUED' },
          }),
        );
      } catch (error) {
        if ((error as Error).name === 'ConditionalCheckFailedException') return; // taken already
        throw error;
      }
      started(n);
      await doc.send(
        new UpdateCommand({
          TableName,
          Key,
          UpdateExpression: 'SET #s = :done',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':done': 'SUCCESS' },
        }),
      );
    };

    const consume = async () => {
      while (!stopped) {
        const seen = wakes;
        const heads = await doc.send(
          new QueryCommand({
            TableName,
            IndexName: INDEX.ready.name,
            KeyConditionExpression: '#p = :p',
            ExpressionAttributeNames: { '#p': INDEX.ready.partition },
            ExpressionAttributeValues: { ':p': PARTITION },
            Limit: concurrency,
          }),
        );
        const items = heads.Items ?? [];
        if (items.length === 0) await idle(seen);
        else await Promise.all(items.map((i) => claimAndRun(String(i.pk), numberOf(String(i.pk)))));
      }
    };
    const consumer = consume();

    const system: PeerSystem = {
      async enqueue(n) {
        const pk = keyOf(n);
        await doc.send(
          new PutCommand({
            TableName,
            Item: {
              pk,
              sk: 'TASK',
              status: 'QUEUED',
              [INDEX.ready.partition]: PARTITION,
              // Oldest first, as a queue; the task number breaks ties within a millisecond.
              [INDEX.ready.sort]: `${Date.now()}#${String(n).padStart(9, '0')}`,
            },
          }),
        );
        if (wait.kind === 'woken') wake();
      },
      async stop() {
        stopped = true;
        wakeUp?.();
        await consumer;
        client.destroy();
      },
    };
    return system;
  };
}
