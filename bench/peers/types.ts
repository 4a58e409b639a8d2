/** The peer benchmark's shapes: a system under test as the method drives it, and the report it writes. */
import type { BenchReport } from '../write-benchmark-doc.js';

/**
 * One queue with a producer and an idle consumer in this process. The system calls the `started`
 * callback it was opened with first thing in its handler, with the task number it was enqueued with.
 */
export interface PeerSystem {
  /** Sends one task; resolves when the producer's call returns (the handler may have started already). */
  enqueue(n: number): Promise<unknown>;
  /** Stops the consumer and closes every connection; the server is the caller's to stop. */
  stop(): Promise<void>;
}

export type OpenSystem = (started: (n: number) => void) => Promise<PeerSystem>;

/** What the method sets, the same for every system. */
export interface Method {
  warmup: number;
  samples: number;
  /** The random wait before each single task, uniform in [min, max) ms after the previous one started. */
  gapMs: { min: number; max: number };
  burstTasks: number;
  /** Handlers in flight per consumer (Leasehold's default `workerConcurrency`, set on the others). */
  concurrency: number;
}

export interface SingleFigures {
  samples: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface BurstFigures {
  tasks: number;
  /** From the first enqueue call issued to the last handler started. */
  lastStartMs: number;
  tasksPerS: number;
}

export interface PeerRow {
  system: string;
  /** The server it ran against, with its version. */
  backend: string;
  /** How its consumer learns of new work: poll interval, LISTEN/NOTIFY, a blocking Redis command. */
  learnsOfWork: string;
  status: 'measured' | 'not available' | 'failed';
  /** Why it is not available or failed. */
  note?: string;
  single?: SingleFigures;
  burst?: BurstFigures;
}

export interface PeersReport {
  date: string;
  command: string;
  machine: BenchReport['machine'];
  durationS: number;
  method: Method;
  /** Package and server versions, name to version. */
  versions: Record<string, string>;
  rows: PeerRow[];
}
