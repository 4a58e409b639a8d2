/**
 * Measure 7: cold start. Bundles the four Lambda functions the way the stack's NodejsFunction does
 * (cdk/leasehold-function.ts), reports each bundle's size minified and gzipped, and times the
 * import of the worker bundle in fresh Node processes against the import of an empty file.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build, type BuildOptions } from 'esbuild';
import { LAMBDA_ALIASES, LAMBDA_BUNDLING } from '../../cdk/lambda-bundling.js';
import { measure, median, round, type BenchContext, type Measure } from '../measure.js';

const run = promisify(execFile);
const FUNCTIONS = ['worker', 'api', 'recovery', 'fire'] as const;
const KB = 1024;
// 600 KB / 200 KB until issue 29, which took out of every bundle @aws-sdk/client-lambda (its
// operation schemas, endpoint rules and event-stream codec, about 18 KB gzipped: starting a worker is
// one signed POST, shared/fleet/lambda-invoke.ts) and the SDK's credential chain past the environment
// (ini files, SSO, STS web identity, instance metadata, about 33 KB gzipped: cdk/lambda-bundling.ts
// aliases it to shared/lambda-credentials.ts). Before that: 180 KB gzipped until the lost-answer
// primitive, the priority lanes and the per-owner schedule list. The API and fire bundles leave out
// the lease path: they build the request runtime (shared/request-runtime.ts), whose store is
// TaskRequests, not the whole TaskStore. 500 KB / 160 KB until issue 33: flows and durable steps
// added about 12 KB minified to the worker and API bundles (their store, the handler context's
// ctx.step and ctx.enqueueChildren, POST /flows), which were 507.6 and 512.2 KB after it. The way back
// under 500: a worker store without the request side (lists, stats, debounce, flows' enqueue), which
// TaskStore now inherits from TaskRequests.
const TARGET_MINIFIED_KB = 520;
const TARGET_GZIP_KB = 168;

/**
 * What the CDK passes to esbuild for the stack's bundling props (cdk/lambda-bundling.ts), with the
 * source map a deployment ships when asked (`-c leasehold:sourceMaps=true`): the CDK's bare
 * `--sourcemap` (linked), whose sourceMappingURL comment makes --enable-source-maps read and parse
 * the map at import. The import time is measured with and without; the sizes are of the .js alone.
 */
const CDK_OPTIONS = {
  bundle: true,
  platform: 'node',
  target: LAMBDA_BUNDLING.target,
  format: LAMBDA_BUNDLING.format,
  minify: LAMBDA_BUNDLING.minify,
  sourcemap: true,
  mainFields: [...LAMBDA_BUNDLING.mainFields],
  external: LAMBDA_BUNDLING.externalModules,
  alias: LAMBDA_ALIASES,
} satisfies BuildOptions;

/** Required inside the timed process: times only the require, not Node's own start. */
const TIMER = `const { performance } = require('node:perf_hooks');
const t = performance.now();
require(process.argv[2]);
process.stdout.write(String(performance.now() - t) + '\\n');
process.exit(0);
`;

const group = '7. cold start';

export async function coldStart(ctx: BenchContext): Promise<Measure[]> {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-cold-start-'));
  try {
    return [...(await bundleSizes(ctx, dir)), ...(await importTimes(ctx, dir))];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Bundles each function into `dir/<name>/index.js` as the stack does, and measures the bundles. */
export async function bundleSizes(ctx: BenchContext, dir: string): Promise<Measure[]> {
  // No package.json above os.tmpdir() is ours, but say it anyway: these .js files are CommonJS.
  await writeFile(join(dir, 'package.json'), '{ "type": "commonjs" }\n');
  const results: Measure[] = [];
  for (const fn of FUNCTIONS) {
    const outfile = join(dir, fn, 'index.js');
    const entry = fileURLToPath(new URL(`../../functions/${fn}.ts`, import.meta.url));
    const { warnings } = await build({ ...CDK_OPTIONS, entryPoints: [entry], outfile, logLevel: 'silent' });
    const code = await readFile(outfile);
    const gzipped = gzipSync(code, { level: 9 }).length;
    const mapBytes = (await stat(`${outfile}.map`)).size;
    ctx.log(
      `${fn}: ${code.length} bytes minified, ${gzipped} gzipped (map ${mapBytes})${warnings.length ? `, ${warnings.length} esbuild warnings` : ''}`,
    );
    const parameters = {
      bytes: code.length,
      gzipBytes: gzipped,
      sourceMapBytes: mapBytes,
      kb: '1 KB = 1024 bytes',
      esbuild: { ...CDK_OPTIONS, sourcemap: 'linked' },
    };
    results.push(
      measure({
        group,
        name: `${fn} bundle, minified`,
        value: round(code.length / KB, 1),
        unit: 'KB',
        target: { op: '<=', value: TARGET_MINIFIED_KB },
        parameters,
        note: 'the .js alone, AWS SDK included; the source map is a separate file',
      }),
      measure({
        group,
        name: `${fn} bundle, gzipped`,
        value: round(gzipped / KB, 1),
        unit: 'KB',
        target: { op: '<=', value: TARGET_GZIP_KB },
        parameters,
        note: 'node:zlib gzip level 9 of the .js',
      }),
    );
  }
  return results;
}

/** Times require() of the worker bundle bundleSizes left in `dir` against an empty file, in fresh processes. */
async function importTimes(ctx: BenchContext, dir: string): Promise<Measure[]> {
  const results: Measure[] = [];
  const timer = join(dir, 'time-require.js');
  const empty = join(dir, 'empty.js');
  await writeFile(timer, TIMER);
  await writeFile(empty, '');
  const runs = ctx.quick ? 5 : 15;
  const settings = ['', '--enable-source-maps'];
  const times = settings.map(() => ({ worker: [] as number[], empty: [] as number[] }));
  // Interleaved (each run: both settings, bundle then empty file), so a burst of load from the
  // other benchmarks on the machine hits every series alike.
  for (let i = 0; i < runs; i++) {
    for (const [s, nodeOptions] of settings.entries()) {
      times[s]!.worker.push(await timeRequire(timer, join(dir, 'worker', 'index.js'), nodeOptions));
      times[s]!.empty.push(await timeRequire(timer, empty, nodeOptions));
    }
  }
  for (const [s, nodeOptions] of settings.entries()) {
    const workerMs = median(times[s]!.worker);
    const emptyMs = median(times[s]!.empty);
    const label = nodeOptions ? 'with --enable-source-maps' : 'without source maps';
    ctx.log(`worker import ${label}: median ${round(workerMs, 1)} ms, empty file ${round(emptyMs, 2)} ms`);
    results.push(
      measure({
        group,
        name: `worker bundle import time, ${label}`,
        value: round(workerMs - emptyMs, 1),
        unit: 'ms',
        parameters: {
          runs,
          NODE_OPTIONS: nodeOptions,
          workerMedianMs: round(workerMs, 2),
          emptyMedianMs: round(emptyMs, 2),
          workerRunsMs: times[s]!.worker.map((v) => round(v, 1)),
          node: process.version,
        },
        note: `median of ${runs} fresh processes, require() of the bundle minus require() of an empty file; includes createTaskRuntime(process.env) at import${nodeOptions ? ' and, with this flag (the stack sets it), reading and parsing the source map' : ''}. Local Node ${process.version} on ${process.arch}, not Lambda's Node 22 on ARM64`,
      }),
    );
  }
  return results;
}

/** One fresh `node` process; the environment is the Lambda's essentials only (no tsx loader from ours). */
async function timeRequire(timer: string, file: string, nodeOptions: string): Promise<number> {
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_OPTIONS: nodeOptions,
    LEASEHOLD_TABLE: 'bench',
    AWS_REGION: 'us-east-1',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'ERROR',
  };
  const { stdout } = await run(process.execPath, [timer, file], { env });
  const ms = Number(stdout.trim().split('\n').pop());
  if (!Number.isFinite(ms)) throw new Error(`no timing from ${file}: ${stdout}`);
  return ms;
}
