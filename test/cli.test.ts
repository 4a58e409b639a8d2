import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Writable } from 'node:stream';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../tools/cli/main.js';
import { computeStats, progressBar, watchScreen } from '../tools/cli/format.js';
import { regionOfApiUrl, sigv4Signer } from '../shared/client/sigv4.js';
import { fileProgressReporter, progressLine } from '../tools/cli/file-progress.js';
import { readLine } from '../tools/cli/enqueue-file.js';
import { serveApi, type LocalApiServer } from '../tools/local/http-bridge.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, silentLogger } from './support/worker-world.js';
import { demoTasks } from '../tasks/demo.js';

let server: TestDynamo;
let api: LocalApiServer;
let dir: string;

beforeAll(async () => {
  server = await startTestDynamo();
  const w = await createWorkerWorld(server.endpoint, demoTasks);
  api = await serveApi({ ...w, logger: silentLogger() }, 0);
  dir = await mkdtemp(join(tmpdir(), 'leasehold-cli-'));
});
afterAll(async () => {
  await api.close();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs the CLI and returns its exit code, standard output and standard error. */
async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  const stdout = new Writable({ write: (chunk, _e, done) => ((out += String(chunk)), done()) });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const code = await main(
      [...args, ...(args.includes('--url') ? [] : ['--url', api.url])],
      {},
      stdout as unknown as typeof process.stdout,
      // The client's retries, with waits short enough for a test (an unreachable API is tried 5 times).
      { retry: { baseMs: 1, maxMs: 5 } },
    );
    return { code, out, err: err.mock.calls.map(([c]) => String(c)).join('') };
  } finally {
    err.mockRestore();
  }
}

describe('the leasehold CLI against the HTTP API', () => {
  it('enqueues, gets and lists, for people and as JSON', async () => {
    const queued = await cli(
      'enqueue',
      'demo.sleep',
      '{"ms": 10}',
      '--priority',
      '3',
      '--key',
      'k-1',
      '--owner',
      'cli-user',
    );
    expect(queued.code).toBe(0);
    const id = /^queued (\S+) \(demo\.sleep, QUEUED\)$/m.exec(queued.out)![1]!;
    expect(
      (
        await cli(
          'enqueue',
          'demo.sleep',
          '{"ms": 10}',
          '--priority',
          '3',
          '--key',
          'k-1',
          '--owner',
          'cli-user',
        )
      ).out,
    ).toContain(`already queued (same idempotency key) ${id}`);

    const got = await cli('get', id, '--owner', 'cli-user');
    expect(got.out).toMatch(new RegExp(`^id +${id}$`, 'm'));
    expect(got.out).toMatch(/^priority +3$/m);
    expect(got.out).toMatch(/^payload +\{"ms":10\}$/m);

    const listed = await cli('list', '--owner', 'cli-user', '--json');
    expect(JSON.parse(listed.out).tasks.map((t: { id: string }) => t.id)).toEqual([id]);
    expect(JSON.parse((await cli('get', id, '--owner', 'cli-user', '--json')).out).task.id).toBe(id);
    expect((await cli('list', '--owner', 'cli-user')).out.split('\n')[0]).toMatch(
      /^ID +TYPE +STATUS +ATTEMPTS +CREATED +PROGRESS$/,
    );

    expect((await cli('cancel', id, '--owner', 'cli-user')).out.trim()).toBe(`${id} CANCELLED`);
    expect((await cli('retry', id, '--owner', 'cli-user')).out.trim()).toBe(`${id} QUEUED`);
    const stats = await cli('stats', '--owner', 'cli-user', '--json');
    expect(JSON.parse(stats.out)).toMatchObject({ total: 1, byStatus: { QUEUED: 1 } });
    // Its cost so far: the enqueue, the cancel and the retry, one write each (the task item is under 1 KB).
    expect(JSON.parse(stats.out).costByType['demo.sleep']).toMatchObject({
      tasks: 1,
      requests: 3,
      writeUnits: 3,
    });
    expect((await cli('stats', '--owner', 'cli-user')).out).toMatch(/^demo\.sleep +1 +3 +0 +3 /m);
    expect((await cli('get', id, '--owner', 'cli-user')).out).toMatch(
      /^cost +3 requests, 0 read units, 3 write units/m,
    );
  });

  it('enqueues with a group, and debounced enqueues join one task', async () => {
    const grouped = await cli(
      'enqueue',
      'demo.sleep',
      '{"ms": 10}',
      '--group',
      'customer-1',
      '--owner',
      'g-user',
    );
    const id = /^queued (\S+) /m.exec(grouped.out)![1]!;
    expect(JSON.parse((await cli('get', id, '--owner', 'g-user', '--json')).out).task.group).toBe(
      'customer-1',
    );
    const args = [
      'enqueue',
      'demo.echo',
      '{"v": 1}',
      '--debounce',
      'user-7',
      '--window',
      '60000',
      '--owner',
      'd-user',
    ];
    const first = await cli(...args);
    const second = await cli(...args);
    const debouncedId = /^queued (\S+) /m.exec(first.out)![1]!;
    expect(second.out).toContain(`joined the waiting task of its debounce key ${debouncedId}`);
    expect((await cli('enqueue', 'demo.echo', '--debounce', 'user-7')).code).toBe(2);
  });

  it('shows API errors with their message and field, and exits 1; usage errors exit 2', async () => {
    const bad = await cli('enqueue', 'demo.sleep', '{"ms": "soon"}');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('error 400:');
    expect(bad.err).toContain('payload.ms:');
    const missing = await cli('get', 'no-such-task');
    expect([missing.code, missing.err]).toEqual([
      1,
      expect.stringContaining('error 404: No task no-such-task'),
    ]);
    expect((await cli('enqueue', 'demo.echo', '{not json')).code).toBe(2);
    expect((await cli('frobnicate')).code).toBe(2);
    expect((await cli('list', '--bogus')).code).toBe(2);
    expect((await cli('list', '--url', 'not a url')).code).toBe(2);
    const down = await cli('list', '--url', 'http://127.0.0.1:9');
    expect([down.code, down.err]).toEqual([1, expect.stringContaining('cannot reach the Leasehold API')]);
  });

  it('types, pause and resume: a table for people, JSON for scripts, a 404 for an unknown type', async () => {
    const paused = await cli('pause', 'demo.fail');
    expect(paused).toMatchObject({ code: 0 });
    expect(paused.out.trim()).toMatch(
      /^demo\.fail paused: its tasks wait; running ones finish \(workers see it within \d+ ms\)$/,
    );
    const table = (await cli('types')).out.split('\n');
    expect(table[0]).toMatch(/^TYPE +STATE +WAITING +RUNNING +DELAYED +CHANGED$/);
    expect(table.find((l) => l.startsWith('demo.fail '))).toMatch(
      /^demo\.fail +paused +0 +0 +0 +\S+ by local$/,
    );
    expect(table.find((l) => l.startsWith('demo.echo '))).toMatch(/^demo\.echo +active /);
    const json = JSON.parse((await cli('types', '--json')).out) as {
      types: { type: string; paused: boolean }[];
    };
    expect(json.types.find((t) => t.type === 'demo.fail')?.paused).toBe(true);
    expect((await cli('resume', 'demo.fail')).out.trim()).toBe(
      'demo.fail resumed: its waiting tasks are claimed again',
    );
    const unknown = await cli('pause', 'demo.nope');
    expect([unknown.code, unknown.err]).toEqual([
      1,
      expect.stringContaining('error 404: No task type "demo.nope"'),
    ]);
    expect((await cli('pause')).code).toBe(2);
  });

  it('enqueue --file streams a JSONL file: a summary with each failed line, exit 1 if any failed', async () => {
    const file = join(dir, 'tasks.jsonl');
    await writeFile(
      file,
      [
        '{"type":"demo.echo","payload":{"n":1}}',
        '{"type":"demo.sleep","payload":{"ms":10},"priority":3,"delaySeconds":60}',
        '',
        '{not json',
        '{"type":"demo.sleep","payload":{"ms":"soon"}}',
        '{"type":"demo.echo","payload":"k","idempotencyKey":"file-k"}',
        '{"type":5}',
      ].join('\n') + '\n',
    );
    const first = await cli('enqueue', '--file', file, '--owner', 'file-user');
    expect(first.code).toBe(1);
    const lines = first.out.trim().split('\n');
    expect(lines[0]).toBe('created 3, existing 0, failed 3');
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^ {2}line 4: LINE_NOT_JSON: not JSON/),
      expect.stringMatching(/^ {2}line 5: VALIDATION_FAILED: .*payload\.ms: /),
      expect.stringMatching(/^ {2}line 7: LINE_INVALID: not a task: type: /),
    ]);

    // Again: the lines with no key are new tasks; the one with a key is the task it made before.
    const again = await cli('enqueue', '--file', file, '--owner', 'file-user', '--json');
    expect(again.code).toBe(1);
    expect(JSON.parse(again.out)).toMatchObject({
      created: 2,
      existing: 1,
      failed: 3,
      failures: [{ line: 4 }, { line: 5, code: 'VALIDATION_FAILED' }, { line: 7, code: 'LINE_INVALID' }],
    });
    const listed = JSON.parse((await cli('list', '--owner', 'file-user', '--json')).out).tasks;
    expect(listed).toHaveLength(5);
    expect(listed.find((t: { priority: number }) => t.priority === 3)).toMatchObject({ type: 'demo.sleep' });

    const good = join(dir, 'good.jsonl');
    await writeFile(good, '{"type":"demo.echo"}\r\n{"type":"demo.echo","payload":2}');
    expect(await cli('enqueue', '--file', good, '--owner', 'file-user-2')).toMatchObject({
      code: 0,
      out: 'created 2, existing 0, failed 0\n',
    });
    expect((await cli('enqueue', 'demo.echo', '--file', good)).code).toBe(2);
    expect((await cli('enqueue', '--file', join(dir, 'missing.jsonl'))).code).toBe(2);
  });

  it('flow FILE.json sends the body of POST /flows and prints the ids under their parents; a refused one exits 1 naming the field', async () => {
    const file = join(dir, 'flow.json');
    const flow = {
      task: { type: 'demo.sum' },
      children: [
        { type: 'demo.echo', payload: { n: 1 } },
        { task: { type: 'demo.sum', optional: true }, children: [{ type: 'demo.echo', payload: { n: 2 } }] },
      ],
    };
    await writeFile(file, JSON.stringify(flow));
    const queued = await cli('flow', file, '--owner', 'flow-user', '--key', 'flow-k');
    expect(queued.code).toBe(0);
    const lines = queued.out.trimEnd().split('\n');
    const root = /^queued flow (\S+) \(4 tasks, root WAITING_CHILDREN\)$/.exec(lines[0]!)![1]!;
    expect(lines.slice(1)).toEqual([
      `${root}  demo.sum`,
      expect.stringMatching(/^ {2}child-\w+ {2}demo\.echo$/),
      expect.stringMatching(/^ {2}child-\w+ {2}demo\.sum$/),
      expect.stringMatching(/^ {4}child-\w+ {2}demo\.echo$/),
    ]);
    const nested = lines[3]!.trim().split(/\s+/)[0]!;
    expect(JSON.parse((await cli('get', nested, '--owner', 'flow-user', '--json')).out).task).toMatchObject({
      parentId: root,
      optional: true,
      status: 'WAITING_CHILDREN',
    });
    // As a person reads it: its parent, how many of its children ended, and the waiting parents counted.
    const shown = (await cli('get', nested, '--owner', 'flow-user')).out;
    expect(shown).toMatch(new RegExp(`^parent +${root} \\(optional child\\)$`, 'm'));
    expect(shown).toMatch(/^children +0 of 1 ended$/m);
    const stats = (await cli('stats', '--owner', 'flow-user')).out;
    expect(stats).toMatch(/^TYPE +QUEUED +WAITING_CHILDREN +RUNNING /m);
    expect(stats).toMatch(/^demo\.sum +0 +2 +0 /m);
    // Sent again with its key: the same flow; --json prints the answer.
    const again = await cli('flow', '--file', file, '--owner', 'flow-user', '--key', 'flow-k', '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.out)).toMatchObject({ id: root, created: false, task: { id: root } });
    expect((await cli('flow', file, '--owner', 'flow-user', '--key', 'flow-k')).out).toMatch(
      /^already queued \(same idempotency key\) flow /,
    );

    const bad = join(dir, 'bad-flow.json');
    await writeFile(
      bad,
      JSON.stringify({ ...flow, children: [{ type: 'demo.sleep', payload: { ms: 'soon' } }] }),
    );
    const refused = await cli('flow', bad, '--owner', 'flow-user-2');
    expect([refused.code, refused.err]).toEqual([1, expect.stringContaining('children.0.payload.ms:')]);
    expect(JSON.parse((await cli('list', '--owner', 'flow-user-2', '--json')).out).tasks).toEqual([]);
    const notJson = join(dir, 'not-json.json');
    await writeFile(notJson, '{"task":');
    expect((await cli('flow', notJson)).code).toBe(2);
    expect((await cli('flow', join(dir, 'missing.json'))).code).toBe(2);
    expect((await cli('flow')).code).toBe(2);
    expect((await cli('flow', file, file)).code).toBe(2);
  });

  it('reads a line as the body of POST /tasks, in the client terms, and draws the file progress', () => {
    expect(
      readLine('{"type":"demo.echo","delaySeconds":2,"timeoutSeconds":30,"runAt":"x","maxAttempts":1}'),
    ).toEqual({
      task: { type: 'demo.echo', options: { delay: 2_000, timeout: 30_000, runAt: 'x', maxAttempts: 1 } },
    });
    expect(readLine('{"type":"demo.echo","delay":5}')).toMatchObject({ code: 'LINE_INVALID' });
    expect(readLine('[1')).toMatchObject({ code: 'LINE_NOT_JSON' });

    const progress = (batches: number) => ({
      doneBytes: 50,
      totalBytes: 200,
      totals: { created: 90, existing: 5, failed: 5 },
      batches,
    });
    expect(progressLine(progress(1))).toBe(
      '[#####...............]  25% 100 tasks: created 90, existing 5, failed 5',
    );
    const written: string[] = [];
    const plain = fileProgressReporter({
      isTTY: false,
      write: (t: string) => (written.push(t), true),
    } as never);
    for (let b = 1; b <= 20; b++) plain.update(progress(b));
    plain.finish();
    // A log gets a line every 10 batches, not one per batch.
    expect(written).toHaveLength(2);
    const drawn: string[] = [];
    const tty = fileProgressReporter({ isTTY: true, write: (t: string) => (drawn.push(t), true) } as never);
    tty.update(progress(1));
    tty.update(progress(2));
    tty.finish();
    expect(drawn.map((d) => d.slice(0, 5))).toEqual(['\r\x1b[2K', '\r\x1b[2K', '\n']);
  });

  it('watch draws counts and running tasks with a progress bar and the lease time left', async () => {
    const now = Date.parse('2026-11-30T09:00:00Z');
    const screen = watchScreen(
      [
        {
          id: 'a',
          type: 'demo.sleep',
          status: 'RUNNING',
          priority: 0,
          attempts: 1,
          maxAttempts: 3,
          createdAt: '',
          updatedAt: '',
          availableAt: '2026-11-30T08:59:00Z',
          progress: 0.5,
          leaseOwner: 'w1',
          leaseUntil: '2026-11-30T09:00:42Z',
        },
        {
          id: 'b',
          type: 'demo.echo',
          status: 'QUEUED',
          priority: 0,
          attempts: 0,
          maxAttempts: 3,
          createdAt: '',
          updatedAt: '',
          availableAt: '2026-11-30T08:59:30Z',
        },
      ],
      now,
      'http://x',
    );
    expect(screen).toContain('QUEUED 1   WAITING_CHILDREN 0   RUNNING 1');
    expect(screen).toMatch(/a +demo\.sleep +\[##########\.{10}\] {2}50% +42\.0 s +w1/);
    expect(progressBar(1, 4)).toBe('[####] 100%');
    expect(computeStats([], now)).toEqual({
      byType: {},
      costByType: {},
      byStatus: {},
      runningLeases: 0,
      oldestQueuedAgeMs: undefined,
      total: 0,
    });
    const run = await cli('watch', '--count', '2', '--interval', '10');
    expect(run.code).toBe(0);
    expect(run.out.match(/^Leasehold /gm)).toHaveLength(2);
  });
});

describe('SigV4 for the deployed API', () => {
  it('finds the region in an execute-api URL and signs requests for execute-api there', async () => {
    const url = new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/tasks?limit=5');
    expect(regionOfApiUrl(url)).toBe('eu-west-1');
    expect(regionOfApiUrl(new URL('http://127.0.0.1:3000/tasks'))).toBeUndefined();
    const sign = sigv4Signer(
      'eu-west-1',
      { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
      new Date('2026-11-30T09:00:00Z'),
    );
    const headers = await sign(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"type":"demo.echo"}',
    });
    expect(headers['x-amz-date']).toBe('20261130T090000Z');
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261130\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    const again = await sign(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"type":"demo.echo"}',
    });
    const other = await sign(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"type":"demo.fail"}',
    });
    expect(again.authorization).toBe(headers.authorization);
    expect(other.authorization).not.toBe(headers.authorization);
  });
});
