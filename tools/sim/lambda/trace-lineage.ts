/**
 * Lambda's recursive loop detection, as pure rules: the `Lineage` field of the X-Ray trace header
 * (`X-Amzn-Trace-Id`) counts the invocations of one chain of events. Lambda puts it in the trace id it
 * hands the runtime (`Lambda-Runtime-Trace-Id`, hence `_X_AMZN_TRACE_ID`); the AWS SDK forwards that
 * as the header of every call the function makes (its recursion-detection middleware); an invocation
 * that arrives with it is the next hop. After 16 invocations of one chain Lambda stops the next one
 * (RecursiveInvocationException to a synchronous caller; an asynchronous event goes to the on-failure
 * destination) unless the function's RecursiveLoop is Allow. (Lambda developer guide, "Lambda recursive
 * loop detection"; AWS Compute blog, "Detecting and stopping recursive loops in AWS Lambda functions".)
 *
 * Formats seen in trace headers: `Lineage=1:fe460cdd:0` (the current one: hops, a hash, a second
 * counter) and the first `Lineage=a87bd80c:1|68fd508a:5` (hash:count per resource). Both are read; the
 * sim writes the current one, with the hops first.
 */
import { createHash, randomBytes } from 'node:crypto';

/** How many invocations of one chain run before Lambda stops the next (about 16, per the guide). */
export const RECURSION_LIMIT = 16;

export type RecursiveLoop = 'Allow' | 'Terminate';

export interface Lineage {
  /** Invocations in the chain so far, this one included once it runs. */
  hops: number;
  /** Eight hex digits naming the chain (the sim: from the function that started it). */
  hash: string;
}

/** The Lineage of a trace header, or undefined (no header, no field, a field the sim cannot read). */
export function lineageOf(header: string | string[] | undefined): Lineage | undefined {
  const text = Array.isArray(header) ? header[0] : header;
  if (!text) return undefined;
  const field = text
    .split(';')
    .map((part) => part.trim())
    .find((part) => part.startsWith('Lineage='));
  if (!field) return undefined;
  const value = field.slice('Lineage='.length);
  const current = /^(\d+):([0-9a-f]{8}):\d+$/i.exec(value);
  if (current) return { hops: Number(current[1]), hash: current[2]!.toLowerCase() };
  // The first format: a count per resource; the chain is as deep as its deepest count.
  let deepest: Lineage | undefined;
  for (const entry of value.split('|')) {
    const m = /^([0-9a-f]{8}):(\d+)$/i.exec(entry);
    if (m && (!deepest || Number(m[2]) > deepest.hops)) deepest = { hops: Number(m[2]), hash: m[1]! };
  }
  return deepest;
}

/** The lineage of the invocation about to run: one hop further, or the first of a new chain. */
export function nextHop(incoming: Lineage | undefined, functionArn: string): Lineage {
  if (incoming) return { hops: incoming.hops + 1, hash: incoming.hash };
  return { hops: 1, hash: createHash('sha256').update(functionArn).digest('hex').slice(0, 8) };
}

/** Whether Lambda stops this invocation: the chain already ran `limit` of them and the function does not allow loops. */
export function isStopped(next: Lineage, limit: number, recursiveLoop: RecursiveLoop | undefined): boolean {
  return next.hops > limit && recursiveLoop !== 'Allow';
}

/** The trace id the runtime gets for one invocation: a fresh root and parent, and the chain's lineage. */
export function runtimeTraceId(now: number, lineage: Lineage): string {
  const root = `1-${Math.floor(now / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;
  return `Root=${root};Parent=${randomBytes(8).toString('hex')};Sampled=0;Lineage=${lineage.hops}:${lineage.hash}:0`;
}

/** What Lambda answers a synchronous caller whose invocation it stopped (Invoke API errors). */
export const RECURSION_MESSAGE =
  "Lambda has detected your function being invoked in a recursive loop with other AWS resources and stopped your function's invocation.";
