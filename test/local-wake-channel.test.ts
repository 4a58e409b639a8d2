/**
 * The local wake channel (tools/local/wake-channel.ts). Channels opened in this one process register
 * under separate ports and behave like separate processes; one test uses a real second process.
 */
import { spawnSync } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWakeChannel, type WakeChannel, type WakeChannelOptions } from '../tools/local/wake-channel.js';
import { startNodeProcess } from './support/node-process.js';

let root: string;
let dir: string;
const opened: WakeChannel[] = [];
const sockets: Socket[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'leasehold-wake-'));
  // Nested and missing: the channel creates it.
  dir = join(root, 'data', 'wake');
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
  for (const s of sockets.splice(0)) s.close();
  await rm(root, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(condition: () => boolean, timeoutMs = 1_000): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(2);
  }
}

/** A channel and how many times it was rung. */
async function open(options: Partial<WakeChannelOptions> = {}) {
  const channel = await openWakeChannel({ dir, ...options });
  opened.push(channel);
  const peer = { channel, rings: 0 };
  channel.onRing(() => peer.rings++);
  return peer;
}

/** A plain UDP socket that counts every datagram, to stand in at a port named by a hand-written file. */
async function listener() {
  const socket = createSocket('udp4');
  sockets.push(socket);
  const counted = { socket, datagrams: 0, port: 0 };
  socket.on('message', () => counted.datagrams++);
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  counted.port = socket.address().port;
  return counted;
}

/** A pid that belonged to a process which has exited (pids are not reused this quickly). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  if (child.pid === undefined) throw new Error('could not spawn');
  return child.pid;
}

describe('wake channel', () => {
  it('a ring reaches every other channel within milliseconds, and not the ringer', async () => {
    const [a, b, c] = [await open(), await open(), await open()];
    const latencies: number[] = [];
    for (let round = 1; round <= 3; round++) {
      const start = performance.now();
      a.channel.ring();
      await waitFor(() => b.rings === round && c.rings === round);
      latencies.push(performance.now() - start);
      await sleep(10);
    }
    // Best of three, so a busy machine's one slow timer does not fail the test.
    expect(Math.min(...latencies)).toBeLessThan(50);
    await sleep(20);
    expect(a.rings).toBe(0);
    expect([b.rings, c.rings]).toEqual([3, 3]);
    expect(a.channel.stats()).toMatchObject({ sent: 6, peers: 2, errors: 0 });
  });

  it('a burst of 1,000 rings sends a handful of datagrams per peer, and the last ring is not dropped', async () => {
    const [a, b, c] = [await open(), await open(), await open()];
    for (let i = 0; i < 1_000; i++) a.channel.ring();
    await waitFor(() => b.rings > 0 && c.rings > 0);
    await sleep(50);
    expect(b.rings).toBeLessThanOrEqual(2);
    expect(c.rings).toBeLessThanOrEqual(2);

    // 1,000 rings spread over 50+ ms: at most one datagram per peer per 5 ms window, plus the trailing one.
    const before = b.rings;
    const start = performance.now();
    for (let batch = 0; batch < 50; batch++) {
      for (let i = 0; i < 20; i++) a.channel.ring();
      await sleep(1);
    }
    const elapsed = performance.now() - start;
    await sleep(50);
    expect(b.rings - before).toBeGreaterThanOrEqual(1);
    expect(b.rings - before).toBeLessThanOrEqual(Math.ceil(elapsed / 5) + 2);

    // A ring inside the coalescing window after a datagram went out still gets one of its own, later.
    const settled = b.rings;
    a.channel.ring();
    await waitFor(() => b.rings === settled + 1);
    a.channel.ring();
    await waitFor(() => b.rings === settled + 2);
  });

  it("a closed channel's file is gone and the others stop sending to it", async () => {
    // refreshMs 0: every flush rereads the folder, so this does not depend on when fs.watch reports.
    const a = await open({ refreshMs: 0 });
    const b = await open();
    const c = await open();
    expect(await readdir(dir)).toHaveLength(3);
    a.channel.ring();
    await waitFor(() => b.rings === 1 && c.rings === 1);
    expect(a.channel.stats().sent).toBe(2);

    await b.channel.close();
    await b.channel.close(); // twice is fine
    expect(await readdir(dir)).toHaveLength(2);
    await sleep(10);
    a.channel.ring();
    await waitFor(() => c.rings === 2);
    expect(a.channel.stats()).toMatchObject({ sent: 3, peers: 1, errors: 0 });
    expect(b.rings).toBe(1);
  });

  it('notices a peer that joins through fs.watch, long before refreshMs', async () => {
    const a = await open({ refreshMs: 60_000 });
    const b = await open();
    // fs.watch reports asynchronously: ring until the newcomer hears it.
    for (let i = 0; b.rings === 0; i++) {
      if (i > 50) throw new Error('the newcomer was never rung');
      a.channel.ring();
      await sleep(20);
    }
    expect(a.channel.stats().peers).toBe(1);
  });

  it('ignores and deletes the file of a process that is gone', async () => {
    const a = await open({ refreshMs: 0 });
    const b = await open();
    const stray = await listener();

    // The setup can tell: a live pid's file at that port is rung.
    const live = join(dir, `${process.pid}-${stray.port}.port`);
    await writeFile(live, '');
    a.channel.ring();
    await waitFor(() => stray.datagrams === 1 && b.rings === 1);
    await rm(live);

    const stale = join(dir, `${deadPid()}-${stray.port}.port`);
    await writeFile(stale, '');
    await sleep(10);
    a.channel.ring();
    await waitFor(() => b.rings === 2);
    await waitFor(() => !existsSync(stale));
    await sleep(20);
    expect(stray.datagrams).toBe(1);
    expect(a.channel.stats()).toMatchObject({ peers: 1, errors: 0 });
  });

  it('never throws: no peers, after close, a throwing listener, a stray datagram', async () => {
    const a = await open();
    expect(() => a.channel.ring()).not.toThrow();
    await sleep(20);
    expect(a.channel.stats()).toMatchObject({ sent: 0, peers: 0, errors: 0 });

    const aFiles = await readdir(dir);
    const b = await open();
    b.channel.onRing(() => {
      throw new Error('a listener bug');
    });
    let unsubscribed = 0;
    const off = b.channel.onRing(() => unsubscribed++);
    off();
    // Not a wake: something else sending to b's port.
    const bFile = (await readdir(dir)).find((name) => !aFiles.includes(name));
    const bPort = Number(/^\d+-(\d+)\.port$/.exec(bFile ?? '')?.[1]);
    expect(bPort).toBeGreaterThan(0);
    const stray = await listener();
    stray.socket.send('hello', bPort, '127.0.0.1');

    await sleep(20);
    a.channel.ring();
    await waitFor(() => b.rings === 1);
    expect(unsubscribed).toBe(0);
    expect(b.channel.stats()).toMatchObject({ received: 1, errors: 1 });

    await a.channel.close();
    expect(() => a.channel.ring()).not.toThrow();
    await sleep(20);
    expect(a.channel.stats().errors).toBe(0);
  });

  it('a process that rings just before it ends still wakes the others, and its channel keeps nothing alive', async () => {
    const a = await open({ refreshMs: 50 });
    const child = await startNodeProcess(['--import', 'tsx', 'test/support/wake-peer.ts', dir, 'ring-once'], {
      env: process.env,
      ready: /^rang$/m,
      what: 'the ringing process',
    });
    // It never closes its channel, yet the process ends on its own, and its ring arrived.
    expect(await child.exited).toBe(0);
    await waitFor(() => a.rings === 1);
    // Ending without close() leaves its file; the next refresh finds the pid gone and removes it.
    const left = (await readdir(dir)).find((name) => name.startsWith(`${child.child.pid}-`));
    expect(left).toBeDefined();
    await sleep(60);
    a.channel.ring();
    await waitFor(() => !existsSync(join(dir, left!)));
  });

  it(
    'wakes a real second process, and cleans up after it when it is killed',
    { timeout: 15_000 },
    async () => {
      const child = await startNodeProcess(['--import', 'tsx', 'test/support/wake-peer.ts', dir], {
        env: process.env,
        ready: /^ready$/m,
        what: 'the wake peer',
        stdin: true,
      });
      try {
        const a = await open({ refreshMs: 50 });
        expect(a.channel.stats().peers).toBe(1);
        a.channel.ring();
        // The child prints `rung` and rings back.
        await waitFor(() => /^rung$/m.test(child.output()) && a.rings === 1, 2_000);
        const childFile = (await readdir(dir)).find((name) => name.startsWith(`${child.child.pid}-`));
        expect(childFile).toBeDefined();

        child.child.kill('SIGKILL');
        await child.exited;
        // A crashed process leaves its file; the next refresh (here after 50 ms) finds its pid dead.
        expect(existsSync(join(dir, childFile!))).toBe(true);
        await sleep(60);
        a.channel.ring();
        await waitFor(() => !existsSync(join(dir, childFile!)));
        await sleep(20);
        expect(a.channel.stats().peers).toBe(0);
      } finally {
        child.child.kill('SIGKILL');
      }
    },
  );
});
