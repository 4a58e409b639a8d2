/**
 * An optional record of every lease-path step a worker or recovery takes (claims, renewals, outcome
 * writes and their answers, handler start and end, recovery fixes), one JSON object a line. The chaos
 * harness checks the protocol's invariants from these histories and a final scan, nothing else.
 */
import { appendFileSync } from 'node:fs';
import type { LeaseEvents, OutcomeWriteKind } from '../../shared/events.js';

export type HistoryEvent =
  | { ev: 'claim'; task: string; token: number; leaseUntil: number; startedAt?: number }
  | {
      ev: 'renew';
      task: string;
      token: number;
      outcome: 'renewed' | 'cancel-requested' | 'lost' | 'error';
      leaseUntil?: number;
    }
  /** `sent` is written before the request, so a holder killed while its write was in flight is still seen. */
  | {
      ev: 'write';
      task: string;
      token: number;
      write: OutcomeWriteKind;
      outcome: 'sent' | 'ok' | 'refused' | 'error';
      status?: string;
    }
  | { ev: 'start' | 'end'; task: string; token: number }
  | {
      ev: 'recover';
      task: string;
      token: number;
      leaseUntil: number;
      action: 'requeued' | 'failed' | 'cancelled';
    }
  /** Written before a claim or a recovery fix is sent: a writer killed in flight leaves its outcome unknown. */
  | { ev: 'intent'; task: string; op: 'claim' | 'recover' };

export interface HistorySink {
  record(event: HistoryEvent): void;
}

/** Writes the lease-path steps of `events` to `sink` as history lines; returns the unsubscribe function. */
export function recordHistory(events: LeaseEvents, sink: HistorySink): () => void {
  const off = [
    events.on('claim:intent', ({ taskId }) => sink.record({ ev: 'intent', task: taskId, op: 'claim' })),
    events.on('recover:intent', ({ taskId }) => sink.record({ ev: 'intent', task: taskId, op: 'recover' })),
    events.on('claim:won', ({ taskId, token, leaseUntil, startedAt }) =>
      sink.record({ ev: 'claim', task: taskId, token, leaseUntil, startedAt }),
    ),
    events.on('recover:fix', ({ taskId, token, leaseUntil, action }) =>
      sink.record({ ev: 'recover', task: taskId, token, leaseUntil, action }),
    ),
    events.on('renew', ({ taskId, token, outcome, leaseUntil }) =>
      sink.record({
        ev: 'renew',
        task: taskId,
        token,
        outcome,
        ...(leaseUntil === undefined ? {} : { leaseUntil }),
      }),
    ),
    events.on('handler:start', ({ taskId, token }) => sink.record({ ev: 'start', task: taskId, token })),
    events.on('handler:end', ({ taskId, token }) => sink.record({ ev: 'end', task: taskId, token })),
    events.on('write:sent', ({ taskId, token, write }) =>
      sink.record({ ev: 'write', task: taskId, token, write, outcome: 'sent' }),
    ),
    events.on('write:answered', ({ taskId, token, write, outcome, status }) =>
      sink.record({ ev: 'write', task: taskId, token, write, outcome, ...(status ? { status } : {}) }),
    ),
  ];
  return () => off.forEach((unsubscribe) => unsubscribe());
}

/** Appends each event to a file with the writer's id and the wall-clock time (not the possibly skewed lease clock). */
export function fileHistory(path: string, writer: string, clockOffsetMs: number): HistorySink {
  return {
    record: (event) =>
      appendFileSync(path, `${JSON.stringify({ t: Date.now(), w: writer, off: clockOffsetMs, ...event })}\n`),
  };
}

/** Keeps events in memory (tests). */
export class MemoryHistory implements HistorySink {
  readonly events: (HistoryEvent & { t: number; w: string; off: number })[] = [];
  constructor(
    private readonly writer: string,
    private readonly now: () => number = Date.now,
    private readonly offset = 0,
  ) {}
  record(event: HistoryEvent): void {
    this.events.push({ t: this.now(), w: this.writer, off: this.offset, ...event });
  }
  /** The same history seen as another writer (several workers sharing one list). */
  as(writer: string, offset = 0): HistorySink {
    return { record: (event) => this.events.push({ t: this.now(), w: writer, off: offset, ...event }) };
  }
}
