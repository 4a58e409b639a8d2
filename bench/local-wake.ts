/**
 * `npm run bench:local-wake [-- --samples N]`: enqueue-to-start across local processes sharing a table.
 * Process A serves the API on an embedded dynalite (`leasehold serve --api --recovery`); process B is
 * a worker only (`leasehold serve --worker`) on A's dynalite and the same data directory, so A's
 * enqueues ring B through the wake channel (tools/local/wake-channel.ts). Samples are spaced by a
 * random 0-1.5 s, so without the ring a task would wait half a poll interval (500 ms) on average.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { samples: { type: 'string' } } });
const samples = Number(values.samples ?? 40);
const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-local-wake-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const children: ChildProcess[] = [];

/** Starts `leasehold serve` with these flags; resolves with its output so far once `ready` matches it. */
function serve(flags: string[], env: Record<string, string>, ready: RegExp): Promise<string> {
  // Node itself (not npx): a signal to the child then reaches the server, whose exit closes the pipes
  // this process reads (through npx it did not, and the benchmark never exited).
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/cli/leasehold.ts', 'serve', ...flags], {
    env: { ...process.env, LEASEHOLD_DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: 'ERROR', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) resolve(out);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`serve ${flags.join(' ')} exited ${code}: ${out}`)));
  });
}

try {
  const a = await serve(['--api', '--recovery'], { LEASEHOLD_PORT: '0' }, /listening on (http:\/\/\S+)/);
  const apiUrl = /listening on (http:\/\/\S+)/.exec(a)![1]!;
  const endpoint = /DynamoDB\s+(http:\/\/\S+)/.exec(a)![1]!;
  await serve(['--worker'], { LEASEHOLD_DYNAMODB_ENDPOINT: endpoint }, /worker\s+\S+/);
  const call = async (method: string, path: string, body?: unknown) =>
    (await (
      await fetch(`${apiUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      })
    ).json()) as { task: { id: string; createdAt: string; startedAt?: string } };
  const delays: number[] = [];
  for (let i = 0; i < samples + 3; i++) {
    await sleep(Math.random() * 1_500);
    const { task } = await call('POST', '/tasks', { type: 'demo.echo', payload: i });
    for (;;) {
      const t = (await call('GET', `/tasks/${task.id}`)).task;
      if (t.startedAt) {
        if (i >= 3) delays.push(Date.parse(t.startedAt) - Date.parse(t.createdAt)); // 3 warm-up tasks
        break;
      }
      await sleep(5);
    }
  }
  delays.sort((x, y) => x - y);
  const at = (p: number) => delays[Math.min(delays.length - 1, Math.ceil(p * delays.length) - 1)];
  process.stdout.write(
    `enqueue-to-start across processes (API process -> worker process, ${delays.length} samples, poll 1000 ms): ` +
      `p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms, max ${delays.at(-1)} ms\n`,
  );
} finally {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const force = setTimeout(() => c.kill('SIGKILL'), 10_000);
          c.once('exit', () => (clearTimeout(force), resolve()));
          c.kill('SIGTERM');
        }),
    ),
  );
  rmSync(dataDir, { recursive: true, force: true });
}
