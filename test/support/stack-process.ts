/** Runs the local stack (`leasehold serve`) as a child process, the way a user starts it. */
import { startNodeProcess, type NodeProcess } from './node-process.js';

export const FAST_STACK_ENV = {
  LEASEHOLD_PORT: '0',
  LEASEHOLD_LEASE_TIMEOUT_MS: '1500',
  LEASEHOLD_HEARTBEAT_INTERVAL_MS: '300',
  LEASEHOLD_REQUEST_DEADLINE_MS: '250',
  LEASEHOLD_CLOCK_SKEW_MS: '100',
  LEASEHOLD_MAX_EXECUTION_MS: '10000',
  LEASEHOLD_DRAIN_MARGIN_MS: '1000',
  LEASEHOLD_POLL_INTERVAL_MS: '20',
  LEASEHOLD_RECOVERY_INTERVAL_MS: '1000',
  POWERTOOLS_LOG_LEVEL: 'WARN',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

export interface StackProcess extends NodeProcess {
  url: string | undefined;
}

/** `entry`: what runs the stack (the user's `leasehold serve`, or a harness's own entry point). */
export async function startStackProcess(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 20_000,
  entry = ['tools/cli/leasehold.ts', 'serve'],
): Promise<StackProcess> {
  const stack = await startNodeProcess(['--import', 'tsx', ...entry, ...args], {
    env: { ...process.env, ...FAST_STACK_ENV, ...env },
    ready: /^Ctrl-C stops it/m,
    what: 'the stack',
    timeoutMs,
  });
  return { ...stack, url: /listening on (http:\/\/\S+)/.exec(stack.output())?.[1] };
}

export async function http(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
