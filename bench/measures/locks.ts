/**
 * Measure 6: lock throughput (targets: 3 nodes, over 1,000 acquisitions/s, conflicts under 0.5 %).
 * Three processes (bench/lock-node.ts), each with its own SDK client and event loop, run acquire+release
 * loops for a fixed time: first each loop on a key of its own, then all loops on one shared key.
 */
import { startNodeProcess } from '../../test/support/node-process.js';
import { benchTable, sum } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

export type LockScenario = 'distinct' | 'shared';

/** What each lock node prints when done. */
export interface LockNodeSummary {
  attempts: number;
  acquired: number;
  /** LockNotAcquiredError: the key was held. */
  conflicts: number;
  /** Releases that found the lock no longer ours (the lease ran out and someone took it). */
  lostReleases: number;
  /** Anything else (deadline, network); the first is kept for the report. */
  errors: number;
  firstError?: string;
  elapsedMs: number;
}

const PROCESSES = 3;
const LOOPS = 16;

export async function lockThroughput(ctx: BenchContext): Promise<Measure[]> {
  const group = '6. lock throughput';
  const durationMs = ctx.quick ? 2_000 : 10_000;
  const table = await benchTable(ctx.endpoint, 'locks');
  const results: Measure[] = [];
  for (const scenario of ['distinct', 'shared'] as const) {
    const nodes = await runNodes(ctx.endpoint, table.config.tableName, scenario, durationMs);
    const total = (k: 'attempts' | 'acquired' | 'conflicts' | 'lostReleases' | 'errors') =>
      sum(nodes.map((n) => n[k]));
    // Divided by the slowest node's time: the nodes run side by side, and the last one ends the run.
    const perSecond = total('acquired') / (Math.max(...nodes.map((n) => n.elapsedMs)) / 1000);
    const conflictPct = (100 * total('conflicts')) / total('attempts');
    const label = scenario === 'distinct' ? 'distinct keys' : 'one shared key';
    const firstError = nodes.find((n) => n.firstError)?.firstError;
    ctx.log(
      `${label}: ${total('acquired')} of ${total('attempts')} acquired (${Math.round(perSecond)}/s), ${total('conflicts')} conflicts (${round(conflictPct, 3)} %), ${total('errors')} errors${firstError ? ` (${firstError})` : ''}`,
    );
    const parameters = {
      processes: PROCESSES,
      loopsPerProcess: LOOPS,
      durationMs,
      attempts: total('attempts'),
      acquired: total('acquired'),
      conflicts: total('conflicts'),
      errors: total('errors'),
      lostReleases: total('lostReleases'),
      acquiredPerProcess: nodes.map((n) => n.acquired),
    };
    const distinct = scenario === 'distinct';
    results.push(
      measure({
        group,
        name: `lock acquisitions/s, ${PROCESSES} processes, ${label}`,
        value: round(perSecond, 1),
        unit: 'acquisitions/s',
        ...(distinct ? { target: { op: '>=' as const, value: 1_000 } } : {}),
        parameters,
        // Each acquisition is two writes (acquire, release) on one dynalite process: its write rate bounds this figure, not the lock API.
        note: 'two writes per acquisition; bounded by the write rate of dynalite (one process) on this machine',
      }),
      measure({
        group,
        name: `lock conflict rate, ${label}`,
        value: round(conflictPct, 3),
        unit: '%',
        ...(distinct ? { target: { op: '<=' as const, value: 0.5 } } : {}),
        parameters,
        ...(distinct
          ? {}
          : {
              note: `all ${PROCESSES * LOOPS} loops try one key without retries: while one holds it, every other attempt conflicts by nature`,
            }),
      }),
    );
  }
  return results;
}

/** Starts the nodes, starts them together once all are ready, and collects their summaries. */
async function runNodes(
  endpoint: string,
  tableName: string,
  scenario: LockScenario,
  durationMs: number,
): Promise<LockNodeSummary[]> {
  // Start-up (tsx, the SDK, the warm-up lock) takes seconds on a busy machine and is not measured.
  const started = await Promise.allSettled(
    Array.from({ length: PROCESSES }, () =>
      startNodeProcess(
        [
          '--import',
          'tsx',
          'bench/lock-node.ts',
          endpoint,
          tableName,
          scenario,
          String(LOOPS),
          String(durationMs),
        ],
        {
          env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
          ready: /^ready$/m,
          what: 'a lock node',
          timeoutMs: 60_000,
          stdin: true,
        },
      ),
    ),
  );
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    for (const node of nodes) node.child.stdin?.end('start\n');
    const guard = setTimeout(() => nodes.forEach((n) => n.child.kill()), durationMs + 60_000);
    await Promise.all(nodes.map((n) => n.exited));
    clearTimeout(guard);
    return nodes.map((node) => {
      const line = node
        .output()
        .split('\n')
        .findLast((l) => l.startsWith('{'));
      if (node.child.exitCode !== 0 || !line)
        throw new Error(`a lock node failed (exit ${node.child.exitCode}):\n${node.output()}`);
      return JSON.parse(line) as LockNodeSummary;
    });
  } finally {
    for (const node of nodes)
      if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill();
  }
}
