/**
 * A child Node process whose output is kept, started and awaited until a line says it is ready:
 * the local stack, a standalone dynalite, a benchmark's lock node.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export interface NodeProcess {
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

export interface StartOptions {
  env: NodeJS.ProcessEnv;
  /** Matched against the output; the process counts as started once it matches. */
  ready: RegExp;
  /** What the error says did not start. */
  what: string;
  timeoutMs?: number;
  /** A pipe to the child's stdin (otherwise ignored). */
  stdin?: boolean;
  /** What to run instead of this Node (`npm`, as a user types it); its folder (default: the current one). */
  command?: string;
  cwd?: string;
  /** In a process group of its own, so a signal to `-pid` reaches its children too (npm's). */
  detached?: boolean;
}

/** `node <args>` (or `command <args>`); throws with its output if it exits or takes too long to be ready. */
export async function startNodeProcess(args: string[], options: StartOptions): Promise<NodeProcess> {
  const child = spawn(options.command ?? process.execPath, args, {
    env: options.env,
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.detached ? { detached: true } : {}),
  });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const timeoutMs = options.timeoutMs ?? 20_000;
  for (let waited = 0; !options.ready.test(text); waited += 25) {
    if (child.exitCode !== null || waited > timeoutMs) {
      killAll(child, options.detached === true);
      throw new Error(`${options.what} did not start:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return { child, output: () => text, exited };
}

/** SIGKILL to the child, or to its whole group when it has one (already gone: nothing to do). */
function killAll(child: ChildProcess, group: boolean): void {
  try {
    if (group) process.kill(-child.pid!, 'SIGKILL');
    else child.kill('SIGKILL');
  } catch {
    // the process (group) is gone already
  }
}
