/**
 * The README's sim commands exactly as a newcomer types them, from the project's folder, with no flags:
 * `npm run sim` (its data dir `.leasehold-sim/` inside the project, under the project's package.json
 * with `"type": "module"`), then `npx leasehold --url <the printed URL> enqueue demo.echo ...` signed
 * from the sim.json it wrote, to SUCCESS. The rest of the sim suite runs in a temp dir and could not
 * see the functions fail to load here.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { npxLeasehold, startNpm, taskOf, type NewcomerProcess } from '../support/newcomer-shell.js';

let sim: NewcomerProcess | undefined;
afterAll(async () => {
  if ((await sim?.interrupt(20_000))?.[0] === 'timed out') sim?.kill();
});

describe('the README: npm run sim from the project folder', () => {
  it(
    'starts with its defaults and runs a signed enqueue of demo.echo to SUCCESS',
    { timeout: 8 * 60_000 },
    async () => {
      sim = await startNpm(['run', 'sim'], /Ctrl-C stops it/, 6 * 60_000);
      expect(sim.output()).toContain('.leasehold-sim/sim.json');
      const url = /npx leasehold --url (\S+) enqueue demo\.echo/.exec(sim.output())?.[1];
      expect(url, sim.output()).toBeDefined();

      const enqueued = npxLeasehold(['--url', url!, 'enqueue', 'demo.echo', '{"hello":"world"}']);
      expect(enqueued.out).toMatch(/^queued \S+ \(demo\.echo, QUEUED\)/m);
      expect(enqueued.code).toBe(0);
      const id = /queued (\S+)/.exec(enqueued.out)![1]!;

      let task = taskOf(id, url);
      for (const deadline = Date.now() + 90_000; task.status !== 'SUCCESS' && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 2_000));
        task = taskOf(id, url);
      }
      expect(task).toMatchObject({ status: 'SUCCESS', result: { hello: 'world' } });
    },
  );
});
