/** `npm run chaos [-- --quick] [-- --beyond-skew]`: runs the harness, prints the figures, exits non-zero when an invariant breaks. */
// The pinned SDK's notice about Node 22 (for releases after January 2027) is noise in this report.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { FULL, QUICK, runChaos } = await import('./harness.js');

const args = new Set(process.argv.slice(2));
const base = args.has('--quick') ? QUICK : FULL;
// --beyond-skew: clocks off by twice the margin, to show where safety ends (violations expected).
const options = { ...base, ...(args.has('--beyond-skew') ? { skewFraction: 2 } : {}), log: (line: string) => console.log(line) };
const summary = await runChaos(options);
const { figures } = summary;
console.log(
  [
    `tasks ${figures.tasks}, workers ${options.workers}, kills ${summary.killsDone}, pauses ${summary.pausesDone}, requests ${summary.requests}`,
    `faults injected: ${Object.entries(summary.faults).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    `lost ${figures.lost}, double terminals ${figures.doubleTerminals}, stale writes accepted ${figures.staleWritesAccepted}, stale writes refused ${figures.staleWritesRefused}, overlapping leases ${figures.overlappingLeases}`,
    `handler starts per task ${figures.handlerStartsPerTask.toFixed(3)} (duplicate-execution rate ${figures.duplicateExecutionRate.toFixed(3)}), peak concurrency ${JSON.stringify(figures.peakConcurrency)} (limit demo.fail=2)`,
    `recovery latency after a kill or pause: p50 ${figures.recoveryLatencyMs.p50} ms, p99 ${figures.recoveryLatencyMs.p99} ms, max ${figures.recoveryLatencyMs.max} ms (${figures.recoveryLatencyMs.count} tasks)`,
    `duration ${(summary.durationMs / 1000).toFixed(1)} s`,
    summary.violations.length === 0 ? 'all invariants hold' : `${summary.violations.length} violations:\n${summary.violations.slice(0, 20).map((v) => `  ${v.invariant}: ${v.task ?? ''} ${v.detail}`).join('\n')}`,
  ].join('\n'),
);
// One line a test runner would print: each invariant checked is a test.
const INVARIANTS = ['no task lost', 'exactly one terminal state', 'no write accepted from a non-current token', 'valid leases never overlap', 'attempts <= maxAttempts', 'concurrency limit never exceeded', 'recovered within leaseTimeout + recoveryInterval'];
const broken = new Set(summary.violations.map((v) => v.invariant));
console.log(`chaos: ${INVARIANTS.length - broken.size} passed, ${broken.size} failed`);
process.exit(summary.violations.length === 0 ? 0 : 1);
