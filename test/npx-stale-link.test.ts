/**
 * `npx leasehold` in a checkout whose npx cache was made before the launcher moved from shared/cli/ to
 * tools/cli/. npm installs the project into its npx cache once per path and never relinks its bins
 * (npm/cli#9766), so the cached link keeps pointing at shared/cli/leasehold.mjs. CI's machine keeps its
 * npm cache between runs: without the forwarder at the old path, the README test's `npx leasehold`
 * answered "sh: 1: leasehold: not found" there.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newcomerEnv, projectRoot } from './support/newcomer-shell.js';

const npmCache = mkdtempSync(join(tmpdir(), 'leasehold-npx-cache-'));
afterAll(() => rmSync(npmCache, { recursive: true, force: true }));

const npxHelp = () =>
  spawnSync('npx', ['leasehold', '--help'], {
    cwd: projectRoot,
    env: { ...newcomerEnv, npm_config_cache: npmCache },
    encoding: 'utf8',
    timeout: 60_000,
  });

describe('npx leasehold with an npx cache made before the launcher moved', () => {
  it('still runs the CLI through the link to shared/cli/leasehold.mjs', { timeout: 120_000 }, () => {
    const fresh = npxHelp();
    expect(`${fresh.stdout}${fresh.stderr}`).toMatch(/Usage: leasehold <command>/);

    const [entry] = readdirSync(join(npmCache, '_npx'));
    const link = join(npmCache, '_npx', entry!, 'node_modules/.bin/leasehold');
    expect(readlinkSync(link)).toBe('../leasehold/tools/cli/leasehold.mjs');
    // What npm linked when package.json's bin was shared/cli/leasehold.mjs, and never relinks.
    unlinkSync(link);
    symlinkSync('../leasehold/shared/cli/leasehold.mjs', link);

    const stale = npxHelp();
    expect(`${stale.stdout}${stale.stderr}`).toMatch(/Usage: leasehold <command>/);
    expect(stale.status).toBe(0);
  });
});
