/**
 * A throwaway redis-server: a free port on 127.0.0.1, a temporary directory, no persistence (like
 * dynalite, which keeps its tables in memory). Stopped with SIGTERM; killed at exit if still running.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBinary, versionOf } from './binaries.js';
import { stopAtExit } from './cleanup.js';
import { freePort } from './ports.js';
import type { ServerStart } from './types.js';

const READY = /Ready to accept connections/;

export async function startRedis(): Promise<ServerStart> {
  const binary = findBinary('redis-server');
  if (!binary) return { available: false, reason: 'not available (install redis-server)' };
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-peers-redis-'));
  const port = await freePort();
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const forget = stopAtExit(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const exited = once(child, 'exit');
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      if (READY.test(output)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    exited.then(() => reject(new Error(`redis-server exited before it was ready:\n${output}`)), reject);
    setTimeout(() => reject(new Error(`redis-server not ready after 10 s:\n${output}`)), 10_000).unref();
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    forget();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await ready;
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    available: true,
    server: { url: `redis://127.0.0.1:${port}`, port, version: versionOf(binary), stop },
  };
}
