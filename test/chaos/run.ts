/**
 * `npm run chaos [-- --quick] [-- --beyond-skew] [-- --index-lag <ms>]`: runs the harness, prints the
 * figures, exits non-zero when an invariant breaks. `--index-lag 0` turns the index lag off (default:
 * up to 1,000 ms in the quick run, 2,000 ms in the full one; at most 2,000).
 */
// The pinned SDK's notice about Node 22 (for releases after January 2027) is noise in this report.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { FULL, MAX_INDEX_LAG_MS, QUICK, runChaos } = await import('./harness.js');

const argv = process.argv.slice(2);
const args = new Set(argv);
const base = args.has('--quick') ? QUICK : FULL;
const lagAt = argv.indexOf('--index-lag');
const indexLagMs = lagAt === -1 ? base.indexLagMs : Number(argv[lagAt + 1]);
if (!Number.isInteger(indexLagMs) || indexLagMs < 0 || indexLagMs > MAX_INDEX_LAG_MS) {
  console.error(
    `--index-lag takes whole milliseconds from 0 (off) to ${MAX_INDEX_LAG_MS}, not "${argv[lagAt + 1] ?? ''}"`,
  );
  process.exit(2);
}
// --beyond-skew: clocks off by twice the margin, to show where safety ends (violations expected).
const options = {
  ...base,
  indexLagMs,
  ...(args.has('--beyond-skew') ? { skewFraction: 2 } : {}),
  log: (line: string) => console.log(line),
};
const summary = await runChaos(options);
const { figures } = summary;
console.log(
  [
    `tasks ${figures.tasks}, workers ${options.workers}, kills ${summary.killsDone}, pauses ${summary.pausesDone}, requests ${summary.requests}`,
    `faults injected: ${Object.entries(summary.faults)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    summary.indexLag
      ? `index lag up to ${options.indexLagMs} ms: ${summary.indexLag.indexReads} index reads, ${summary.indexLag.indexReadsWhileBehind} while the index trailed the table (up to ${summary.indexLag.maxItemsBehind} items behind); ${summary.indexLag.readBacks} item images replayed`
      : 'index lag off (index reads exact)',
    `claim writes ${summary.claimWrites.sent}, lost races ${summary.claimWrites.refused} (${(summary.claimWrites.refused / Math.max(1, summary.claimWrites.sent - summary.claimWrites.refused)).toFixed(3)} per claim won)`,
    `lost ${figures.lost}, double terminals ${figures.doubleTerminals} (terminal writes applied but unrecorded ${figures.terminalWritesUnrecorded}), stale writes accepted ${figures.staleWritesAccepted}, stale writes refused ${figures.staleWritesRefused}, overlapping leases ${figures.overlappingLeases}`,
    `handler starts per task ${figures.handlerStartsPerTask.toFixed(3)} (duplicate-execution rate ${figures.duplicateExecutionRate.toFixed(3)}), peak concurrency ${JSON.stringify(figures.peakConcurrency)} (limit demo.fail=2), most starts a window ${JSON.stringify(figures.mostStartsPerWindow)} (limit demo.limited=5/s), most running of one group ${JSON.stringify(figures.peakGroupConcurrency)} (limit demo.sleep=1)`,
    `flows: ${figures.flows.parents} parents and their ${figures.flows.children} children checked (none started before its last child ended, none readied twice for one wait, none left waiting)`,
    `recovery latency after a kill or pause: p50 ${figures.recoveryLatencyMs.p50} ms, p99 ${figures.recoveryLatencyMs.p99} ms, max ${figures.recoveryLatencyMs.max} ms (${figures.recoveryLatencyMs.count} tasks)`,
    `duration ${(summary.durationMs / 1000).toFixed(1)} s`,
    summary.violations.length === 0
      ? 'all invariants hold'
      : `${summary.violations.length} violations (up to 8 of each kind):\n${firstOfEach(summary.violations, 8)
          .map((v) => `  ${v.invariant}: ${v.task ?? ''} ${v.detail}`)
          .join('\n')}`,
  ].join('\n'),
);
// One line a test runner would print: each invariant checked is a test.
const INVARIANTS = [
  'no task lost',
  'exactly one terminal state',
  'no write accepted from a non-current token',
  'valid leases never overlap',
  'attempts <= maxAttempts',
  'concurrency limit never exceeded',
  'recovered within leaseTimeout + recoveryInterval',
  'processes stay up',
];
const broken = new Set(summary.violations.map((v) => v.invariant));
console.log(`chaos: ${INVARIANTS.length - broken.size} passed, ${broken.size} failed`);
process.exit(summary.violations.length === 0 ? 0 : 1);

/** Up to `n` violations of each invariant, so a flood of one kind does not hide another. */
function firstOfEach<T extends { invariant: string }>(violations: T[], n: number): T[] {
  const seen = new Map<string, number>();
  return violations.filter((v) => {
    const count = (seen.get(v.invariant) ?? 0) + 1;
    seen.set(v.invariant, count);
    return count <= n;
  });
}
