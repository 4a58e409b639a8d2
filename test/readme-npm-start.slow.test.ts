/**
 * The README's quickstart exactly as a newcomer types it, from the project's folder, with its defaults:
 * `npm start` (port 3000, data in `.leasehold/`), the curl enqueue, `npx leasehold enqueue`, `list`,
 * `get`, the 400 for a bad payload, then Ctrl-C. The other local-stack tests start it on port 0 in
 * temp dirs, which hides a broken default path.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { npxLeasehold, startNpm, taskOf, type NewcomerProcess } from './support/newcomer-shell.js';

const URL_OF_README = 'http://127.0.0.1:3000';

let stack: NewcomerProcess | undefined;
afterAll(() => stack?.kill());

describe('the README: npm start from the project folder', () => {
  it('listens on port 3000 and runs the quickstart commands', { timeout: 120_000 }, async () => {
    stack = await startNpm(['start'], /Ctrl-C stops it/, 60_000);
    expect(stack.output()).toContain(`listening on ${URL_OF_README}`);

    // The README's curl.
    const posted = await fetch(`${URL_OF_README}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"type":"demo.echo","payload":{"hello":"world"}}',
    });
    expect(posted.status).toBe(201);
    const { task } = (await posted.json()) as { task: { id: string; status: string } };
    expect(task.status).toBe('QUEUED');

    const enqueued = npxLeasehold(['enqueue', 'demo.sleep', '{"ms": 200}', '--priority', '5']);
    expect(enqueued.out).toMatch(/^queued \S+ \(demo\.sleep, QUEUED\)/m);
    const sleeper = /queued (\S+)/.exec(enqueued.out)![1]!;

    let echo = taskOf(task.id);
    for (const deadline = Date.now() + 30_000; echo.status !== 'SUCCESS' && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 500));
      echo = taskOf(task.id);
    }
    expect(echo).toMatchObject({ status: 'SUCCESS', result: { hello: 'world' } });

    const listed = npxLeasehold(['list']);
    expect(listed.code).toBe(0);
    expect(listed.out).toContain(sleeper);
    expect(listed.out).toContain(task.id);

    const bad = npxLeasehold(['enqueue', 'demo.sleep', '{"ms": "soon"}']);
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('error 400: Fix these fields and send again: payload.ms');

    // Ctrl-C, as a terminal sends it to the whole foreground group: the stack drains and everything ends.
    const [code, signal] = await stack.interrupt(30_000);
    expect(code === 0 || signal === 'SIGINT', `${code} ${signal}`).toBe(true);
  });
});
