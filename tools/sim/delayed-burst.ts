/**
 * A bulk delayed enqueue beside running leases (review 2, MEDIUM-4), in the deployed shape with
 * DynamoDB's throttling on: the stack synthesized with warm throughput for a peak
 * (`leasehold:peakStartsPerSecond`), its limits scaled down by `throttleScale` so a laptop can reach
 * them. Long tasks run (and are replaced as they end, so `leases` stay held throughout) while a bulk
 * load enqueues `tasks` delayed tasks as fast as the table lets it: each enqueue sent again after a
 * throttle, as a producer would. Figures:
 * - what throttled: the gate's refusals by resource (the table, and each index);
 * - the leases: every renewal seen (a consistent read of each running task every 500 ms), as gaps
 *   between the moves of its `leaseUntil`, before and during the load; leases lost (a task claimed again);
 * - the load: its duration, rate, and the throttles it met.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { createClient } from '../../shared/client/http-client.js';
import { defineConfig } from '../../shared/config.js';
import { createDocumentClient } from '../../shared/store/dynamo.js';
import { taskKey } from '../../shared/table-layout.js';
import { createTaskRuntime } from '../../shared/task-runtime.js';
import { taskDefinitions } from '../../tasks/catalog.js';
import { startSim } from './sim.js';

export interface DelayedBurstOptions {
  /** Delayed tasks enqueued in bulk. */
  tasks: number;
  /** Tasks holding leases throughout. */
  leases: number;
  /** How long the leases are watched before the load starts. */
  baselineMs: number;
  /** DynamoDB's limits times this (0.05: a warm delay index of 4,000 writes a second takes 200). */
  throttleScale: number;
  /** The warm-throughput setting the stack is synthesized with. */
  peakStartsPerSecond: number;
  /** Enqueues in flight. */
  lanes: number;
  /** The emulator behind the gate (the sim's default: DynamoDB Local). */
  dynamodb?: 'dynamodb-local' | 'dynalite';
  progress?: (line: string) => void;
}

export interface Gaps {
  renewals: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface DelayedBurstFigures {
  options: Omit<DelayedBurstOptions, 'progress'>;
  load: { tasks: number; seconds: number; perSecond: number; throttledAttempts: number };
  throttled: { total: number; byResource: Record<string, number> };
  /** Write units each resource took over the whole run (`table`, `index/<name>`). */
  writeUnits: Record<string, number>;
  leases: {
    heartbeatMs: number;
    before: Gaps;
    during: Gaps;
    /** Tasks seen claimed more than once (a lease lost and taken again). */
    reclaimed: number;
    /** Long tasks that ended, and how. */
    ended: Record<string, number>;
  };
}

/** The scenario as the test and `npm run sim:delayed-burst` run it (the tasks and baseline aside). */
export const DELAYED_BURST_SETTINGS = {
  leases: 16,
  // The delay and owner indexes take 200 writes a second at a twentieth of their 4,000. This machine's
  // producer (2 cores) enqueues 280 to 340 a second unthrottled, so the load outruns the limit at every
  // speed seen. At a tenth (400 a second) it met throttles only in its bursts, and a slow run met none.
  throttleScale: 0.05,
  peakStartsPerSecond: 2_000,
  lanes: 64,
  // DynamoDB Local slows as the table grows past tens of thousands of items (measure-delayed-burst.ts).
  dynamodb: 'dynalite',
} as const;

const LONG_TASK_MS = 200_000;
const SAMPLE_MS = 500;
const THROTTLED = /Throttl|ProvisionedThroughputExceeded|RequestLimitExceeded/;

export async function runDelayedBurst(options: DelayedBurstOptions): Promise<DelayedBurstFigures> {
  const say = options.progress ?? (() => undefined);
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-delayed-burst-'));
  const sim = await startSim({
    dataDir,
    context: { 'leasehold:peakStartsPerSecond': String(options.peakStartsPerSecond) },
    throttleScale: options.throttleScale,
    ...(options.dynamodb ? { dynamodb: options.dynamodb } : {}),
    log: (line) => writeFileSync(join(dataDir, 'sim.log'), `${line}\n`, { flag: 'a' }),
  });
  say(`sim up in ${sim.info.startupMs} ms (data in ${dataDir})`);
  try {
    const admin = sim.info.callers.find((c) => c.name === 'admin')!;
    const credentials = { accessKeyId: admin.accessKeyId, secretAccessKey: admin.secretAccessKey };
    const config = defineConfig({
      tableName: sim.info.dynamodb.tables[0]!,
      region: sim.info.region,
      dynamodbEndpoint: sim.info.dynamodb.gatedEndpoint,
    });
    const doc = createDocumentClient(config, { credentials });
    const producer = createTaskRuntime(config, taskDefinitions, { doc }).submitter;
    const client = createClient({ url: sim.info.apiUrl, region: sim.info.region, credentials });

    // The long tasks, through the API (their kicks start workers), replaced as they end.
    const watched = new Map<string, { leaseUntil?: number; movedAt?: number; tokens: Set<number> }>();
    const ended: Record<string, number> = {};
    const reclaimed = new Set<string>();
    const gaps: { at: number; gapMs: number }[] = [];
    const startLong = async () => {
      const { task } = await client.enqueue('demo.report', { ms: LONG_TASK_MS });
      watched.set(task.id, { tokens: new Set() });
    };
    for (let i = 0; i < options.leases; i++) await startLong();

    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const ids = [...watched.keys()];
        for (let i = 0; i < ids.length; i += 100) {
          const out = await doc.send(
            new BatchGetCommand({
              RequestItems: {
                [config.tableName]: { Keys: ids.slice(i, i + 100).map(taskKey), ConsistentRead: true },
              },
            }),
          );
          const now = Date.now();
          for (const item of out.Responses?.[config.tableName] ?? []) {
            const id = String(item.id);
            const seen = watched.get(id)!;
            if (typeof item.leaseToken === 'number' && item.status === 'RUNNING')
              seen.tokens.add(item.leaseToken);
            if (seen.tokens.size > 1) reclaimed.add(id);
            const leaseUntil = typeof item.leaseUntil === 'number' ? item.leaseUntil : undefined;
            if (leaseUntil !== undefined && leaseUntil !== seen.leaseUntil) {
              if (seen.movedAt !== undefined && seen.leaseUntil !== undefined)
                gaps.push({ at: now, gapMs: now - seen.movedAt });
              seen.leaseUntil = leaseUntil;
              seen.movedAt = now;
            }
            if (['SUCCESS', 'FAILED', 'CANCELLED'].includes(String(item.status))) {
              ended[String(item.status)] = (ended[String(item.status)] ?? 0) + 1;
              watched.delete(id);
              if (sampling) await startLong();
            }
          }
        }
        await sleep(SAMPLE_MS);
      }
    })();

    const allRunning = Date.now() + 120_000;
    while ([...watched.values()].filter((w) => w.leaseUntil !== undefined).length < options.leases) {
      if (Date.now() > allRunning)
        throw new Error(`the ${options.leases} long tasks did not all start in 2 minutes`);
      await sleep(SAMPLE_MS);
    }
    say(`${options.leases} leases held; watching their renewals for ${options.baselineMs / 1000} s`);
    await sleep(options.baselineMs);

    const loadStart = Date.now();
    let next = 0;
    let throttledAttempts = 0;
    const hour = 3_600_000;
    await Promise.all(
      Array.from({ length: options.lanes }, async () => {
        while (next < options.tasks) {
          const n = next++;
          for (let attempt = 0; ; attempt++) {
            try {
              await producer.enqueue({
                type: 'demo.echo',
                owner: admin.arn,
                payload: { n },
                delayMs: hour,
                idempotencyKey: `delayed-burst-${n}`,
              });
              break;
            } catch (error) {
              if (!THROTTLED.test(String((error as Error).name)) || attempt > 50) throw error;
              throttledAttempts++;
              await sleep(50 + Math.random() * 200);
            }
          }
          if (n > 0 && n % 10_000 === 0) say(`${n} delayed tasks enqueued`);
        }
      }),
    );
    const loadEnd = Date.now();
    say(`${options.tasks} delayed tasks in ${((loadEnd - loadStart) / 1000).toFixed(1)} s`);
    sampling = false;
    await sampler;

    const state = (await (await fetch(`${sim.info.adminUrl}/state`)).json()) as {
      dynamodb?: {
        throttled?: {
          total: number;
          byResource: Record<string, number>;
          consumedByResource: Record<string, { writeUnits: number }>;
        };
      };
    };
    const throttled = state.dynamodb?.throttled ?? { total: 0, byResource: {}, consumedByResource: {} };
    const table = config.tableName;
    // Shorter labels: the table is `table`, an index `index/<name>`.
    const short = (label: string) => (label === table ? 'table' : label.replace(`${table}/`, ''));
    const seconds = (loadEnd - loadStart) / 1000;
    return {
      options: {
        tasks: options.tasks,
        leases: options.leases,
        baselineMs: options.baselineMs,
        throttleScale: options.throttleScale,
        peakStartsPerSecond: options.peakStartsPerSecond,
        lanes: options.lanes,
      },
      load: {
        tasks: options.tasks,
        seconds: Math.round(seconds * 10) / 10,
        perSecond: Math.round(options.tasks / seconds),
        throttledAttempts,
      },
      throttled: {
        total: throttled.total,
        byResource: Object.fromEntries(Object.entries(throttled.byResource).map(([l, n]) => [short(l), n])),
      },
      writeUnits: Object.fromEntries(
        Object.entries(throttled.consumedByResource)
          .filter(([l]) => l === table || l.startsWith(`${table}/`))
          .map(([l, c]) => [short(l), Math.round(c.writeUnits)]),
      ),
      leases: {
        heartbeatMs: config.heartbeatIntervalMs,
        before: gapFigures(gaps.filter((g) => g.at < loadStart)),
        during: gapFigures(gaps.filter((g) => g.at >= loadStart && g.at <= loadEnd)),
        reclaimed: reclaimed.size,
        ended,
      },
    };
  } finally {
    await sim.close();
  }
}

function gapFigures(gaps: { gapMs: number }[]): Gaps {
  const sorted = gaps.map((g) => g.gapMs).sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { renewals: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted.at(-1) ?? 0 };
}

/** Refusals on what the lease path writes: the table itself and the lease index (`sweep`). */
export const leasePathThrottles = (f: DelayedBurstFigures): number =>
  (f.throttled.byResource.table ?? 0) + (f.throttled.byResource['index/sweep'] ?? 0);
