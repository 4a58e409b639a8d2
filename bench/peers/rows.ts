/**
 * The systems the peer benchmark compares, each with the server it needs: started before its rows,
 * stopped after them, whatever happens. A server that is not installed makes its rows 'not available'.
 */
import { startDynaliteProcess } from '../dynalite-process.js';
import { sample } from './sampling.js';
import { startPostgres } from './servers/postgres.js';
import { startRedis } from './servers/redis.js';
import type { ServerStart } from './servers/types.js';
import { bullmq } from './systems/bullmq.js';
import { graphileWorker } from './systems/graphile-worker.js';
import { leasehold, leaseholdSettings } from './systems/leasehold.js';
import { rawDynamo } from './systems/raw-dynamodb.js';
import type { Method, OpenSystem, PeerRow } from './types.js';

/** The raw loop's poll intervals: Leasehold's default, and ten times tighter. */
export const RAW_POLL_INTERVALS_MS = [1_000, 100];

interface RowSpec {
  system: string;
  learnsOfWork: string;
  open: OpenSystem;
}

/** One server and the rows measured against it. */
interface Group {
  start: () => Promise<ServerStart>;
  /** What the rows say they ran against, given the server's version. */
  backend: (version: string) => string;
  rows: (url: string, port: number) => RowSpec[];
  /** The rows' names and wake-ups, for when the server is not available. */
  names: { system: string; learnsOfWork: string }[];
}

export async function measureAll(method: Method, log: (line: string) => void): Promise<PeerRow[]> {
  const { pollIntervalMs } = leaseholdSettings();
  const c = method.concurrency;
  const dynamoRows = (endpoint: string): RowSpec[] => [
    {
      system: 'raw DynamoDB, woken in-process',
      learnsOfWork:
        'the producer, after its PutItem, resolves a promise the idle consumer awaits (same process only); then one Query of the ready index',
      open: rawDynamo(endpoint, { kind: 'woken' }, c),
    },
    ...RAW_POLL_INTERVALS_MS.map((intervalMs) => ({
      system: `raw DynamoDB, polling every ${intervalMs} ms`,
      learnsOfWork: `a Query of the ready index every ${intervalMs} ms while idle`,
      open: rawDynamo(endpoint, { kind: 'poll', intervalMs }, c),
    })),
    {
      system: 'Leasehold',
      learnsOfWork: `an idle Worker polls its ready partitions every ${pollIntervalMs} ms, and hears the store's in-process events (it shares the producer's runtime here), whatever the Worker does with them in this tree`,
      open: leasehold(endpoint),
    },
  ];
  const names = (rows: RowSpec[]) => rows.map(({ system, learnsOfWork }) => ({ system, learnsOfWork }));
  const groups: Group[] = [
    {
      start: async () => {
        const dynalite = await startDynaliteProcess();
        const url = dynalite.endpoint;
        return { available: true, server: { url, port: 0, version: '', stop: () => dynalite.close() } };
      },
      backend: () => 'dynalite (in memory) in its own process',
      rows: (url) => dynamoRows(url),
      names: names(dynamoRows('')),
    },
    {
      start: startRedis,
      // "Redis server v=7.0.15 sha=… malloc=… build=…": the version is what matters.
      backend: (version) => version.replace(/ sha=.*$/, ''),
      rows: (_url, port) => [bullmq(port, c)].map((open) => ({ ...BULLMQ, open })),
      names: [BULLMQ],
    },
    {
      start: startPostgres,
      backend: (version) => version,
      rows: (url) => [graphileWorker(url, c)].map((open) => ({ ...GRAPHILE, open })),
      names: [GRAPHILE],
    },
  ];

  const out: PeerRow[] = [];
  for (const group of groups) {
    const started = await group.start().catch((error: Error) => ({
      available: false as const,
      reason: `server did not start: ${error.message}`,
    }));
    if (!started.available) {
      log(`${group.names.map((n) => n.system).join(', ')}: ${started.reason}`);
      out.push(
        ...group.names.map((n) => ({
          ...n,
          backend: 'none',
          status: 'not available' as const,
          note: started.reason,
        })),
      );
      continue;
    }
    const { server } = started;
    try {
      for (const row of group.rows(server.url, server.port)) {
        const backend = group.backend(server.version);
        log(`measuring ${row.system}...`);
        const t = Date.now();
        try {
          const { single, burst } = await sample(row.open, method);
          log(
            `  p50 ${single.p50} ms, p99 ${single.p99} ms; burst ${burst.tasksPerS} tasks/s (${((Date.now() - t) / 1000).toFixed(0)} s)`,
          );
          out.push({
            system: row.system,
            backend,
            learnsOfWork: row.learnsOfWork,
            status: 'measured',
            single,
            burst,
          });
        } catch (error) {
          log(`  failed: ${(error as Error).message}`);
          out.push({
            system: row.system,
            backend,
            learnsOfWork: row.learnsOfWork,
            status: 'failed',
            note: `failed: ${(error as Error).message.split('\n')[0]}`,
          });
        }
      }
    } finally {
      await server.stop();
    }
  }
  return out;
}

const BULLMQ = {
  system: 'BullMQ',
  learnsOfWork:
    "its Worker blocks in BZPOPMIN on the queue's marker key (a blocking Redis command, up to `drainDelay`, 5 s, at a time), which adding a job wakes",
};

const GRAPHILE = {
  system: 'graphile-worker',
  learnsOfWork:
    'LISTEN "jobs:insert", which adding a job NOTIFYs; it polls every `pollInterval` (2 s) only for jobs due later',
};
