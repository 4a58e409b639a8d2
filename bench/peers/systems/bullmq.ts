/**
 * BullMQ with its own defaults except concurrency (set to Leasehold's, as for every row): a Queue
 * adds jobs, a Worker on a separate blocking connection waits in BZPOPMIN on the queue's marker key,
 * so Redis hands it a new job as soon as one is added, with no polling.
 */
import { Queue, Worker } from 'bullmq';
import type { OpenSystem } from '../types.js';

const QUEUE = 'peers';

export function bullmq(port: number, concurrency: number): OpenSystem {
  return async (started) => {
    // maxRetriesPerRequest null: what BullMQ requires of the Worker's blocking connection.
    const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
    const queue = new Queue<{ n: number }>(QUEUE, { connection });
    const worker = new Worker<{ n: number }>(
      QUEUE,
      async (job) => {
        started(job.data.n);
      },
      { connection, concurrency },
    );
    await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
    return {
      // Finished jobs are removed, so the burst does not grow Redis for the rows after it.
      enqueue: (n) => queue.add('stamp', { n }, { removeOnComplete: true }),
      async stop() {
        await worker.close();
        await queue.close();
      },
    };
  };
}
