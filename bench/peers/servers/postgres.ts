/**
 * A throwaway PostgreSQL: initdb into a temporary directory, pg_ctl start on a free port of 127.0.0.1,
 * trust authentication, and pg_ctl stop (then the directory is removed). PostgreSQL refuses to run as
 * root, so as root both run as `nobody` through runuser, in a directory handed to nobody.
 * fsync and synchronous_commit are off: dynalite and the Redis of this benchmark keep nothing on disk
 * either, so no row pays for durability the others skip.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBinary, findPostgres, versionOf } from './binaries.js';
import { stopAtExit } from './cleanup.js';
import { freePort } from './ports.js';
import type { ServerStart } from './types.js';

const SUPERUSER = 'bench';

export async function startPostgres(): Promise<ServerStart> {
  const bins = findPostgres();
  if (!bins) return { available: false, reason: 'not available (install postgresql)' };
  const asRoot = process.getuid?.() === 0;
  const runuser = asRoot ? findBinary('runuser') : undefined;
  if (asRoot && !runuser)
    return { available: false, reason: 'not available (PostgreSQL refuses root and runuser is missing)' };
  /** Runs a PostgreSQL tool, as nobody when this process is root; throws with its output on failure. */
  const run = (binary: string, args: string[]) => {
    const [command, argv] = runuser ? [runuser, ['-u', 'nobody', '--', binary, ...args]] : [binary, args];
    const out = spawnSync(command, argv, { encoding: 'utf8', timeout: 60_000 });
    if (out.status !== 0)
      throw new Error(`${binary} ${args.join(' ')} failed (${out.status}):\n${out.stdout}${out.stderr}`);
  };

  const dir = await mkdtemp(join(tmpdir(), 'leasehold-peers-pg-'));
  if (asRoot) await chown(dir, uidOf('nobody'), process.getgid?.() ?? 0);
  const data = join(dir, 'data');
  const port = await freePort();
  let started = false;
  const stopNow = () => {
    if (started) run(bins.pgCtl, ['stop', '-D', data, '-m', 'fast', '-w']);
    started = false;
  };
  const forget = stopAtExit(() => {
    try {
      stopNow();
    } catch {
      // at exit there is nobody left to tell
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const stop = async () => {
    try {
      stopNow();
    } finally {
      forget();
      await rm(dir, { recursive: true, force: true });
    }
  };
  try {
    run(bins.initdb, ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--no-sync']);
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c synchronous_commit=off',
    ];
    started = true;
    run(bins.pgCtl, [
      'start',
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      options.join(' '),
    ]);
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return {
    available: true,
    server: {
      url: `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`,
      port,
      version: versionOf(bins.postgres),
      stop,
    },
  };
}

function uidOf(user: string): number {
  const out = spawnSync('id', ['-u', user], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`no user ${user}: ${out.stderr}`);
  return Number(out.stdout.trim());
}
