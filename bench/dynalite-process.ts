/** dynalite in its own process (`leasehold dynamodb`), so the server and the measured client do not share one event loop. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export interface DynaliteProcess {
  endpoint: string;
  close(): Promise<void>;
}

export async function startDynaliteProcess(): Promise<DynaliteProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'shared/cli/leasehold.ts', 'dynamodb', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = once(child, 'exit');
  for (let waited = 0; ; waited += 25) {
    const endpoint = /dynalite listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (endpoint) return { endpoint, close: async () => void (child.kill('SIGTERM'), await exited) };
    if (child.exitCode !== null || waited > 20_000) throw new Error(`dynalite did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
