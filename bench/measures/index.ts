/** The benchmark's measures, in the order docs/benchmark.md numbers them (1-17). */
import type { BenchContext, Measure } from '../measure.js';
import { claimContention } from './contention.js';
import { coldStart } from './cold-start.js';
import { depthGauge } from './depth-gauge.js';
import { batchEnqueue } from './enqueue-batch.js';
import { idleMinute } from './idle.js';
import { enqueueToStart } from './latency.js';
import { lockThroughput } from './locks.js';
import { memoryUse } from './memory.js';
import { recoveryLatency } from './recovery.js';
import { requestsPerTask } from './requests-per-task.js';
import { serveLatency } from './serve-latency.js';
import { throughputRatio } from './throughput.js';
import { burstRatio } from './burst.js';
import { rateLimited } from './rate-limit.js';
import { fairShares, groupedStarts } from './groups.js';
import { flowOfChildren } from './flows.js';

export const MEASURES: { name: string; run: (ctx: BenchContext) => Promise<Measure[]> }[] = [
  { name: 'requests', run: requestsPerTask },
  { name: 'contention', run: claimContention },
  { name: 'throughput', run: throughputRatio },
  { name: 'latency', run: enqueueToStart },
  { name: 'recovery', run: recoveryLatency },
  { name: 'locks', run: lockThroughput },
  { name: 'cold-start', run: coldStart },
  { name: 'memory', run: memoryUse },
  { name: 'depth-gauge', run: depthGauge },
  { name: 'idle', run: idleMinute },
  { name: 'enqueue-batch', run: batchEnqueue },
  { name: 'serve-latency', run: serveLatency },
  { name: 'burst', run: burstRatio },
  { name: 'rate-limit', run: rateLimited },
  { name: 'groups', run: groupedStarts },
  { name: 'fair-shares', run: fairShares },
  { name: 'flows', run: flowOfChildren },
];
