/**
 * Measure 3: throughput against the store's own ceiling. The runtime (enqueue, then one worker
 * draining) against a bare loop that sends the same minimal request sequence per task (put, query,
 * conditional update, update) with the same client, concurrency and dynalite, in the same run.
 * Absolute rates on a shared machine drift; the ratio does not (much). Runs alternate, best of each.
 */
import { performance } from 'node:perf_hooks';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { INDEX } from '../../shared/table-layout.js';
import { benchTable, drain, enqueueMany, type BenchRuntime } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

export async function throughputRatio(ctx: BenchContext): Promise<Measure[]> {
  const tasks = ctx.quick ? 500 : 2_000;
  const repeats = ctx.quick ? 1 : 2;
  const results: Measure[] = [];
  for (const concurrency of [8, 32]) {
    const table = await benchTable(ctx.endpoint, `throughput-${concurrency}`);
    const r = table.runtime();
    const bare: number[] = [];
    const runtime: number[] = [];
    for (let i = 0; i < repeats; i++) {
      bare.push(await bareLoop(r, tasks, concurrency, i));
      const enqueueMs = await enqueueMany(r.store, tasks, concurrency);
      const { elapsedMs } = await drain([r], tasks, { concurrency });
      runtime.push(tasks / ((enqueueMs + elapsedMs) / 1000));
    }
    r.client.destroy();
    const best = { bare: Math.max(...bare), runtime: Math.max(...runtime) };
    ctx.log(
      `concurrency ${concurrency}: runtime ${best.runtime.toFixed(0)} tasks/s, bare loop ${best.bare.toFixed(0)} tasks/s`,
    );
    results.push(
      measure({
        group: '3. throughput',
        name: `runtime / bare loop, concurrency ${concurrency}`,
        value: round(best.runtime / best.bare, 3),
        unit: 'ratio',
        target: { op: '>=', value: 0.85 }, // issue 29
        parameters: {
          tasks,
          concurrency,
          repeats,
          runtimeTasksPerS: runtime.map((v) => round(v, 1)),
          bareTasksPerS: bare.map((v) => round(v, 1)),
        },
      }),
    );
  }
  return results;
}

/** `lanes` loops, each taking tasks one by one through put, query, conditional claim, complete. */
async function bareLoop(r: BenchRuntime, tasks: number, lanes: number, repeat: number): Promise<number> {
  const { doc, config } = r;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      // Each lane has a ready partition of its own, so the bare loop never loses a race.
      const partition = `bare#${repeat}#${lane}`;
      while (next < tasks) {
        const n = next++;
        const pk = `BARE#${repeat}#${n}`;
        const now = Date.now();
        await doc.send(
          new PutCommand({
            TableName: config.tableName,
            Item: {
              pk,
              sk: 'TASK',
              status: 'QUEUED',
              payload: { n },
              [INDEX.ready.partition]: partition,
              [INDEX.ready.sort]: `${now}#${pk}`,
            },
          }),
        );
        const head = await doc.send(
          new QueryCommand({
            TableName: config.tableName,
            IndexName: INDEX.ready.name,
            KeyConditionExpression: '#p = :p',
            ExpressionAttributeNames: { '#p': INDEX.ready.partition },
            ExpressionAttributeValues: { ':p': partition },
            Limit: 1,
          }),
        );
        const key = { pk: head.Items?.[0]?.pk ?? pk, sk: 'TASK' };
        await doc.send(
          new UpdateCommand({
            TableName: config.tableName,
            Key: key,
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
        await doc.send(
          new UpdateCommand({
            TableName: config.tableName,
            Key: key,
            UpdateExpression: 'SET #s = :done',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':done': 'SUCCESS' },
          }),
        );
      }
    }),
  );
  return tasks / ((performance.now() - started) / 1000);
}
