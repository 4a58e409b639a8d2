/** The benchmark's measures, in the order of the issue. */
import type { BenchContext, Measure } from '../measure.js';
import { claimContention } from './contention.js';
import { requestsPerTask } from './requests-per-task.js';

export const MEASURES: { name: string; run: (ctx: BenchContext) => Promise<Measure[]> }[] = [
  { name: 'requests', run: requestsPerTask },
  { name: 'contention', run: claimContention },
];
