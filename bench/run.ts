/**
 * `npm run bench [-- --quick] [-- --only <name>]`: the benchmark. Starts dynalite in its own process,
 * runs each measure, writes the figures to bench/results.json (bench/results-quick.json for
 * --quick) and prints a table. Exits non-zero only when a measure cannot run, not when a target is missed.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
const { writeFile } = await import('node:fs/promises');
const os = await import('node:os');
const { startDynaliteProcess } = await import('./dynalite-process.js');
const { MEASURES } = await import('./measures/index.js');
const { formatTable } = await import('./table.js');

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const unknown = args.filter((a, i) => !['--quick', '--only'].includes(a) && args[i - 1] !== '--only');
if (unknown.length > 0 || (only !== undefined && !MEASURES.some((m) => m.name === only))) {
  console.error(`usage: npm run bench -- [--quick] [--only ${MEASURES.map((m) => m.name).join('|')}]`);
  process.exit(2);
}

const started = Date.now();
const dynalite = await startDynaliteProcess();
const results = [];
try {
  for (const m of MEASURES.filter((m) => !only || m.name === only)) {
    const t = Date.now();
    console.log(`measuring ${m.name}...`);
    results.push(
      ...(await m.run({ endpoint: dynalite.endpoint, quick, log: (line) => console.log(`  ${line}`) })),
    );
    console.log(`  (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  }
} finally {
  await dynalite.close();
}

const report = {
  date: new Date(started).toISOString(),
  command: `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`,
  machine: {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
  },
  durationS: Math.round((Date.now() - started) / 100) / 10,
  measures: results,
};
const out = new URL(quick || only ? './results-quick.json' : './results.json', import.meta.url);
await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
console.log(
  `\n${formatTable(results)}\n\n${results.filter((r) => r.met === false).length} of ${results.filter((r) => r.met !== undefined).length} targets missed; ${report.durationS} s; written to ${out.pathname}`,
);
