/** Calls to the sim's HTTP API signed as one of its callers (sim.json), for the measurement scripts. */
import { sigv4Signer } from '../../shared/client/sigv4.js';
import type { SimInfo } from './sim-info.js';

export type SignedCall = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: unknown }>;

export function signedCaller(info: SimInfo, name = 'admin'): SignedCall {
  const caller = info.callers.find((c) => c.name === name);
  if (!caller) throw new Error(`the sim has no caller named ${name}`);
  const sign = sigv4Signer(info.region, {
    accessKeyId: caller.accessKeyId,
    secretAccessKey: caller.secretAccessKey,
    ...(caller.sessionToken ? { sessionToken: caller.sessionToken } : {}),
  });
  return async (method, path, body) => {
    const url = new URL(path.replace(/^\//, ''), info.apiUrl);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers = await sign(url, {
      method,
      headers: text ? { 'content-type': 'application/json' } : {},
      ...(text ? { body: text } : {}),
    });
    const res = await fetch(url, { method, headers, ...(text ? { body: text } : {}) });
    const raw = await res.text();
    try {
      return { status: res.status, body: JSON.parse(raw) as unknown };
    } catch {
      return { status: res.status, body: raw };
    }
  };
}
