/**
 * `npm run bench:peers [-- --quick]`: enqueue-to-start latency of Leasehold beside a raw DynamoDB loop,
 * BullMQ and graphile-worker, measured the same way (bench/peers/sampling.ts). Starts and stops its own
 * servers, prints a Markdown table, writes bench/peers/results.json and docs/peer-benchmark.md
 * (--quick: bench/peers/results-quick.json only, fewer samples). A row whose server is not installed is
 * reported 'not available'; the run exits non-zero only when a measured system fails.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
const { writeFile } = await import('node:fs/promises');
const os = await import('node:os');
const { fileURLToPath } = await import('node:url');
const { measureAll } = await import('./rows.js');
const { peerTable } = await import('./render.js');
const { leaseholdSettings } = await import('./systems/leasehold.js');
const { packageVersions } = await import('./versions.js');
const { RESULTS_PATH, writePeerDoc } = await import('./write-doc.js');
type Method = import('./types.js').Method;
type PeersReport = import('./types.js').PeersReport;

const args = process.argv.slice(2);
const quick = args.includes('--quick');
if (args.some((a) => a !== '--quick')) {
  console.error('usage: npm run bench:peers [-- --quick]');
  process.exit(2);
}

const method: Method = {
  warmup: quick ? 5 : 10,
  samples: quick ? 50 : 200,
  // Up to the longest poll interval measured (1 s), so arrivals land at a uniformly random poll phase.
  gapMs: { min: 0, max: 1_000 },
  burstTasks: 1_000,
  concurrency: leaseholdSettings().workerConcurrency,
};

const started = Date.now();
const rows = await measureAll(method, (line) => console.log(line));
const report: PeersReport = {
  date: new Date(started).toISOString(),
  command: `npm run bench:peers${args.length ? ` -- ${args.join(' ')}` : ''}`,
  machine: {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
  },
  durationS: Math.round((Date.now() - started) / 100) / 10,
  method,
  versions: packageVersions(),
  rows,
};

const out = quick ? fileURLToPath(new URL('./results-quick.json', import.meta.url)) : RESULTS_PATH;
await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
if (!quick) await writePeerDoc();
console.log(
  `\n${peerTable(rows)}\n\n${report.durationS} s; written to ${out}${quick ? '' : ' and docs/peer-benchmark.md'}`,
);
if (rows.some((r) => r.status === 'failed')) process.exit(1);
