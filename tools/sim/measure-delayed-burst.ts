/**
 * `npm run sim:delayed-burst [-- --tasks N] [-- --quick]`: 100,000 delayed tasks (10,000 with --quick)
 * enqueued in bulk beside 16 running leases, in the sim with DynamoDB's throttling on (scale 0.05, warm
 * throughput for 2,000 starts a second): what throttled, and whether the renewals slowed
 * (tools/sim/delayed-burst.ts). Prints the figures and writes them to tools/sim/results/delayed-burst(-quick).json;
 * exits 1 when a lease-path request was throttled or a lease was lost.
 *
 * Behind the gate runs dynalite (`--dynamodb dynamodb-local` for Amazon's emulator): DynamoDB Local
 * 3.3.1 slows as this table grows (about 350 enqueues a second at first, 80 past 60,000 items, its one
 * busy thread the limit), so the load would stop meeting the throttle it is here to meet.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DELAYED_BURST_SETTINGS, leasePathThrottles, runDelayedBurst } from './delayed-burst.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    tasks: { type: 'string' },
    'throttle-scale': { type: 'string' },
    dynamodb: { type: 'string' },
  },
});
const quick = values.quick === true;
const figures = await runDelayedBurst({
  tasks: Number(values.tasks ?? (quick ? 10_000 : 100_000)),
  ...DELAYED_BURST_SETTINGS,
  baselineMs: quick ? 30_000 : 60_000,
  ...(values['throttle-scale'] !== undefined ? { throttleScale: Number(values['throttle-scale']) } : {}),
  ...(values.dynamodb === 'dynamodb-local' ? { dynamodb: 'dynamodb-local' as const } : {}),
  progress: (line) => process.stderr.write(`${line}\n`),
});
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
mkdirSync('tools/sim/results', { recursive: true });
writeFileSync(
  `tools/sim/results/delayed-burst${quick ? '-quick' : ''}.json`,
  `${JSON.stringify(figures, null, 2)}\n`,
);
const lease = leasePathThrottles(figures);
if (lease > 0 || figures.leases.reclaimed > 0) {
  process.stderr.write(`lease path throttled ${lease} times; ${figures.leases.reclaimed} leases lost\n`);
  process.exit(1);
}
