/**
 * Measure 8: memory. One worker process drains 2,000 tasks (quick: 300) at concurrency 32, then the
 * same again; reports its peak RSS and whether its heap grew from the first drain to the second.
 * The child (bench/memory-worker.ts) is bundled first and run by plain node, so tsx is not in the RSS.
 */
import { lambdaNodeFlags } from '../../tools/sim/lambda/node-runtime.js';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { MemoryReport } from '../memory-worker.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

const run = promisify(execFile);
const MB = 1024 * 1024;

/** The target: the worker fits a 256 MB Lambda, with the V8 limits its Node.js bootstrap sets (the sim uses the same flags). */
const LAMBDA_256_HEAP = lambdaNodeFlags(256).filter(
  (f) => f.startsWith('--max-semi') || f.startsWith('--max-old'),
);

export async function memoryUse(ctx: BenchContext): Promise<Measure[]> {
  const group = '8. memory';
  const tasks = ctx.quick ? 300 : 2_000;
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-memory-'));
  try {
    const bundle = join(dir, 'memory-worker.cjs');
    // CJS so the SDK's require() of node builtins works as is; only builtins stay outside (platform node).
    await build({
      entryPoints: [fileURLToPath(new URL('../memory-worker.ts', import.meta.url))],
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      mainFields: ['module', 'main'],
      outfile: bundle,
      logLevel: 'silent',
    });
    const env = {
      PATH: process.env.PATH ?? '',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    };
    const child = async (nodeFlags: string[]) => {
      const { stdout } = await run(
        process.execPath,
        [...nodeFlags, '--expose-gc', bundle, ctx.endpoint, String(tasks)],
        { env, timeout: 900_000, maxBuffer: 16 * MB },
      );
      return JSON.parse(stdout.trim().split('\n').pop() ?? '') as MemoryReport;
    };
    // In a 256 MB Lambda, V8's heap is sized to the memory (the runtime's bootstrap has passed 5 % as
    // semi-space and 90 % as old space); unbounded on this machine, V8 grows its young generation
    // for speed and RSS shows that headroom, not what the worker keeps.
    const report = await child(LAMBDA_256_HEAP);
    const unbounded = ctx.quick ? undefined : await child([]);
    const peakMb = report.maxRssKb / 1024;
    const growthMb = (report.heapAfterSecondBytes - report.heapAfterFirstBytes) / MB;
    const heap = {
      heapAfterFirstDrainMb: round(report.heapAfterFirstBytes / MB, 2),
      heapAfterSecondDrainMb: round(report.heapAfterSecondBytes / MB, 2),
    };
    ctx.log(
      `peak RSS ${round(peakMb, 1)} MB (${unbounded ? `${round(unbounded.maxRssKb / 1024, 1)} MB with V8's defaults` : 'unbounded run skipped in --quick'}); heap ${heap.heapAfterFirstDrainMb} MB after drain 1, ${heap.heapAfterSecondDrainMb} MB after drain 2; drains ${report.drainMs.map(Math.round).join(', ')} ms`,
    );
    const parameters = {
      tasksPerDrain: tasks,
      workerConcurrency: 32,
      workers: 1,
      nodeFlags: LAMBDA_256_HEAP,
      ...heap,
      maxRssKb: report.maxRssKb,
      drainMs: report.drainMs.map(Math.round),
      node: process.version,
    };
    return [
      measure({
        group,
        name: 'worker process peak RSS, heap sized for 256 MB',
        value: round(peakMb, 1),
        unit: 'MB',
        target: { op: '<=', value: 150 },
        parameters,
        note: 'process.resourceUsage().maxRSS of the bundled worker process over both enqueues and drains',
      }),
      ...(unbounded
        ? [
            measure({
              group,
              name: "worker process peak RSS, V8's default heap limits",
              value: round(unbounded.maxRssKb / 1024, 1),
              unit: 'MB',
              parameters: { ...parameters, nodeFlags: [], maxRssKb: unbounded.maxRssKb },
            }),
          ]
        : []),
      measure({
        group,
        name: 'worker heap growth, drain 1 to drain 2',
        value: round(growthMb, 2),
        unit: 'MB',
        target: { op: '<=', value: 1 },
        parameters,
        note: 'heapUsed after a forced GC following each drain; the target is no growth beyond 1 MB of noise',
      }),
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
