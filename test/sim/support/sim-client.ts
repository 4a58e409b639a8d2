/** What the sim scenarios share: signed calls to the sim's API as one of its callers, and its inspection endpoint. */
import { inject } from 'vitest';
import { sigv4Signer } from '../../../shared/client/sigv4.js';
import type { SimInfo } from '../../../tools/sim/sim.js';

export const sim = (): SimInfo => inject('sim');

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

/** A request to the sim's HTTP API, signed as the named caller (unsigned with `as: null`). */
export const api = (...args: Parameters<typeof apiOf> extends [SimInfo, ...infer Rest] ? Rest : never) =>
  apiOf(sim(), ...args);

/** The same request to a sim of the test's own (one started with other settings than the suite's). */
export async function apiOf(
  info: SimInfo,
  method: string,
  path: string,
  body?: unknown,
  as: string | null = 'admin',
  extraHeaders: Record<string, string> = {},
): Promise<Answer> {
  const url = new URL(path.replace(/^\//, ''), info.apiUrl);
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  let headers: Record<string, string> = {
    ...(text === undefined ? {} : { 'content-type': 'application/json' }),
    ...extraHeaders,
  };
  if (as !== null) {
    const caller = info.callers.find((c) => c.name === as)!;
    const signer = sigv4Signer(info.region, {
      accessKeyId: caller.accessKeyId,
      secretAccessKey: caller.secretAccessKey,
      ...(caller.sessionToken ? { sessionToken: caller.sessionToken } : {}),
    });
    headers = await signer(url, { method, headers, ...(text === undefined ? {} : { body: text }) });
  }
  const res = await fetch(url, { method, headers, ...(text === undefined ? {} : { body: text }) });
  const raw = await res.text();
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export interface SimState {
  functions: Record<
    string,
    {
      invocations: number;
      coldStarts: number;
      throttles: number;
      errors: Record<string, number>;
      metrics: { RecursiveInvocationsDropped: number };
      deepestChain: number;
      environments: { id: string; state: string; pid?: number; invocations: number }[];
      recent: {
        requestId: string;
        startedAt: number;
        durationMs: number;
        coldStart: boolean;
        /** A cold start's init phase (the REPORT line's Init Duration). */
        initDurationMs?: number;
        errorType?: string;
        environment: string;
      }[];
    }
  >;
  requests: Record<string, Record<string, number>>;
  denied: { at: number; service: string; principalArn: string; action: string; resource: string }[];
  grants: { roleArn: string; roleName: string; actions: string[]; resources: string[] }[];
  schedules: unknown[];
  fires: {
    name: string;
    group: string;
    scheduledTime: string;
    attempt: number;
    outcome: string;
    at?: number;
  }[];
  queues: { name: string; arn: string; messages: { body: string; attributes: Record<string, string> }[] }[];
}

export async function simState(since = 0, info: SimInfo = sim()): Promise<SimState> {
  const res = await fetch(`${info.adminUrl}/state?since=${since}`);
  return (await res.json()) as SimState;
}

export async function accessRecords(
  since = 0,
): Promise<
  { at: number; service: string; principalArn: string; action: string; resource: string; allowed: boolean }[]
> {
  return (await (await fetch(`${sim().adminUrl}/access?since=${since}`)).json()) as never;
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 1_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The longest the sim's GSIs take to show a write (its index lag), plus the copies still waiting: a
 * list read after this long shows every write made before the call.
 */
export async function indexLagMaxMs(): Promise<number> {
  const state = (await (await fetch(`${sim().adminUrl}/state`)).json()) as {
    dynamodb: { indexLag: { enabled: boolean; maxMs: number; oldestPendingMs?: number } };
  };
  const { enabled, maxMs, oldestPendingMs } = state.dynamodb.indexLag;
  return enabled ? Math.max(maxMs, oldestPendingMs ?? 0) + 100 : 0;
}

/** The function named by the start of its logical id (Worker, Api, Recovery, Fire). */
export function fn(state: SimState, prefix: string) {
  const entry = Object.entries(state.functions).find(([id]) => id.startsWith(prefix));
  if (!entry) throw new Error(`no function ${prefix} in the sim`);
  return entry[1];
}

/** Requests the template's functions made that their roles did not allow (the callers' refusals are the tests' own). */
export function functionDenials(state: SimState) {
  const roleNames = new Set(state.grants.map((g) => g.roleName));
  return state.denied.filter((d) =>
    roleNames.has(/:assumed-role\/([^/]+)\//.exec(d.principalArn)?.[1] ?? ''),
  );
}
