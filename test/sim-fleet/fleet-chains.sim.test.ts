/**
 * A backlog held at the fleet's cap for the equivalent of two hours of chain hops, in the sim with
 * Lambda's recursion lineage: on AWS an invocation lives about a minute under a backlog, so two hours
 * are about 120 hops, 7.5 times Lambda's limit of 16. Here the recursion limit is lowered to 3 and the
 * claim window to 8 s (so invocations live seconds, not minutes), and the backlog is held until the
 * deepest chain is 8 times the limit. Without RecursiveLoop: Allow the sim drops the 4th hop of every
 * chain; without the fleet's own refills (a scale-up into a freed seat 0, a hand-over into a reserved
 * one) the fleet runs a seat short until the next tick.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOwnSim, type OwnSim } from './own-sim.js';
import { fn, sleep } from '../sim/support/sim-client.js';

const CAP = 2;
const RECURSION_LIMIT = 3;
const DEEPEST_WANTED = 8 * RECURSION_LIMIT;

let own: OwnSim;
beforeAll(async () => {
  own = await startOwnSim('fleet-chains', {
    context: {
      'leasehold:workerMaxConcurrency': String(CAP),
      'leasehold:workerClaimWindowMs': '8000',
    },
    recursionLimit: RECURSION_LIMIT,
  });
});
afterAll(() => own?.close());

describe('a backlog at the cap, chain after chain', () => {
  it(`drops no invocation and keeps the fleet at ${CAP} seats while its chains grow to ${DEEPEST_WANTED} hops`, async () => {
    // The backlog is written straight to the table, so no enqueue kicks a fresh chain into a freed seat:
    // refills come from the running invocations (scale-ups, hand-overs), as at the cap on AWS, where
    // kicks send nothing. One task through the API kicks the first invocation. At 3 s a task, two
    // invocations of 8 slots take about 5 a second: 1,500 outlast the scenario.
    await own.enqueueDirect(1_500, { type: 'demo.sleep', payload: { ms: 3_000 } });
    const kick = await own.api('POST', '/tasks', { type: 'demo.sleep', payload: { ms: 3_000 } });
    expect(kick.status).toBe(201);
    const samples: number[] = [];
    let reachedCap = false;
    let deepest = 0;
    const deadline = Date.now() + 9 * 60_000;
    while (deepest < DEEPEST_WANTED && Date.now() < deadline) {
      await sleep(2_000);
      const held = await own.seatsHeld();
      reachedCap ||= held === CAP;
      if (reachedCap) samples.push(held);
      deepest = fn(await own.state(), 'Worker').deepestChain;
    }
    const worker = fn(await own.state(), 'Worker');
    const atCap = samples.filter((n) => n === CAP).length / samples.length;
    process.stdout.write(
      `FIGURE fleet chains: deepest ${worker.deepestChain} hops (limit ${RECURSION_LIMIT}), ${worker.invocations} invocations, ` +
        `${worker.metrics.RecursiveInvocationsDropped} dropped, seats at the cap in ${(atCap * 100).toFixed(0)} % of ${samples.length} samples\n`,
    );
    expect(worker.deepestChain).toBeGreaterThanOrEqual(DEEPEST_WANTED);
    expect(worker.metrics.RecursiveInvocationsDropped).toBe(0);
    expect(worker.errors).toEqual({});
    expect(atCap).toBeGreaterThanOrEqual(0.9);
  });
});
