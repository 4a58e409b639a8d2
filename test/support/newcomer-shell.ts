/**
 * A README command as a newcomer runs it: from the project's folder, with none of the test suite's
 * settings in the environment, and stopped with Ctrl-C as a terminal sends it (to the whole group).
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { startNodeProcess } from './node-process.js';

export const projectRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The shell's environment less the suite's own LEASEHOLD_ and VITEST settings. */
export const newcomerEnv: NodeJS.ProcessEnv = {
  ...Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('LEASEHOLD_') && !k.startsWith('VITEST')),
  ),
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** `npx leasehold <args>` from the project's folder. */
export function npxLeasehold(args: string[]): { code: number | null; out: string } {
  const run = spawnSync('npx', ['leasehold', ...args], {
    cwd: projectRoot,
    env: newcomerEnv,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: run.status, out: `${run.stdout}${run.stderr}` };
}

/** The task `npx leasehold get <id> --json` prints. */
export function taskOf(id: string, url?: string): { status: string; result?: unknown } {
  const got = npxLeasehold([...(url ? ['--url', url] : []), 'get', id, '--json']);
  if (got.code !== 0) throw new Error(`leasehold get ${id} exited ${got.code}:\n${got.out}`);
  return (JSON.parse(got.out.slice(got.out.indexOf('{'))) as { task: { status: string; result?: unknown } })
    .task;
}

export interface NewcomerProcess {
  child: ChildProcess;
  output(): string;
  /** Ctrl-C to the group; resolves with [exit code, signal] or ['timed out']. */
  interrupt(timeoutMs: number): Promise<[number | null | string, NodeJS.Signals | null]>;
  /** SIGKILL to whatever of the group is left. */
  kill(): void;
}

/** Starts `npm <args>` in its own process group and waits until its output matches `ready`. */
export async function startNpm(args: string[], ready: RegExp, timeoutMs: number): Promise<NewcomerProcess> {
  const { child, output } = await startNodeProcess(args, {
    command: 'npm',
    cwd: projectRoot,
    detached: true,
    env: newcomerEnv,
    ready,
    what: `npm ${args.join(' ')}`,
    timeoutMs,
  });
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  return {
    child,
    output,
    interrupt: async (ms) => {
      if (child.exitCode !== null || child.signalCode !== null) return [child.exitCode, child.signalCode];
      signalGroup('SIGINT');
      return (await Promise.race([
        once(child, 'exit'),
        new Promise((r) => setTimeout(() => r(['timed out', null]), ms)),
      ])) as [number | null | string, NodeJS.Signals | null];
    },
    kill: () => signalGroup('SIGKILL'),
  };
}
