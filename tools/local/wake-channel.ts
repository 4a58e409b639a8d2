/**
 * A local wake channel: processes sharing one data folder (two `leasehold serve`, an API process and a
 * worker process) tell each other "work arrived" so an idle worker claims at once instead of at its next
 * poll. It is a hint, never a correctness mechanism: a lost datagram only means the next poll finds the
 * task, so every failure here is swallowed (and counted).
 *
 * Each channel binds a UDP socket on 127.0.0.1 and registers itself as a file
 * `<dir>/<pid>-<port>.port`. The port is in the name, so finding the peers is one readdir and no file
 * reads (and no half-written file can be read); the pid lets anyone spot and delete the file of a
 * process that crashed.
 */
import { createSocket } from 'node:dgram';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, readdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface WakeChannel {
  /** Tell every other process on this channel that work arrived (fire-and-forget, never throws). */
  ring(): void;
  /** Called when another process rings. Returns an unsubscribe function. */
  onRing(listener: () => void): () => void;
  close(): Promise<void>;
  /** Counters, for tests and diagnostics. */
  stats(): WakeChannelStats;
}

export interface WakeChannelStats {
  /** Datagrams sent (one per peer per flush). */
  sent: number;
  /** Wake datagrams received. */
  received: number;
  /** Swallowed failures: send, readdir, unlink, socket and listener errors. */
  errors: number;
  /** Peers in the cached list (this channel excluded). */
  peers: number;
}

export interface WakeChannelOptions {
  /** The folder peers register in (created if missing), e.g. `<LEASEHOLD_DATA_DIR>/wake`. */
  dir: string;
  /** The peer list is re-read at most this often, unless fs.watch says the folder changed. */
  refreshMs?: number;
  /** At most one datagram per peer per this many ms: a burst of enqueues rings once (plus a trailing ring). */
  coalesceMs?: number;
  /** Whether a process is alive; a file whose pid is not is deleted. Injectable for tests. */
  isAlive?: (pid: number) => boolean;
  /** This process's pid in the file name. */
  pid?: number;
}

const DEFAULT_REFRESH_MS = 500;
const DEFAULT_COALESCE_MS = 5;
/** What a wake datagram says; anything else arriving on the port (a stray sender) is ignored. */
const WAKE = Buffer.from('leasehold-wake/1');
const PEER_FILE = /^(\d+)-(\d+)\.port$/;

/** `kill(pid, 0)` sends nothing: ESRCH means no such process; EPERM means it lives but is not ours. */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

export async function openWakeChannel(options: WakeChannelOptions): Promise<WakeChannel> {
  const { dir } = options;
  const refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
  const coalesceMs = options.coalesceMs ?? DEFAULT_COALESCE_MS;
  const isAlive = options.isAlive ?? processIsAlive;
  const pid = options.pid ?? process.pid;
  const stats: WakeChannelStats = { sent: 0, received: 0, errors: 0, peers: 0 };
  const listeners = new Set<() => void>();
  const swallow = () => void stats.errors++;

  await mkdir(dir, { recursive: true });
  const socket = createSocket({ type: 'udp4' });
  // An 'error' event without a listener would crash the process; for a hint, counting it is enough.
  socket.on('error', swallow);
  socket.on('message', (message) => {
    if (!message.equals(WAKE)) return;
    stats.received++;
    // A throwing listener must neither crash the process (this runs in an event handler) nor starve the others.
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch {
        swallow();
      }
    }
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => {
      socket.close();
      reject(error);
    };
    socket.once('error', failed);
    socket.bind(0, '127.0.0.1', () => {
      socket.off('error', failed);
      resolve();
    });
  });
  // Never keep a process alive just to hear a hint.
  socket.unref();
  const ownFile = `${pid}-${socket.address().port}.port`;
  try {
    // The content is for a human reading the folder; peers use only the name.
    await writeFile(join(dir, ownFile), `pid ${pid} port ${socket.address().port}\n`);
  } catch (error) {
    socket.close();
    throw error;
  }

  let closed = false;
  let peers: number[] = [];
  let peersAt = Number.NEGATIVE_INFINITY;
  let dirty = true;
  let refreshing: Promise<void> | undefined;
  let flushTimer: NodeJS.Timeout | undefined;
  let lastFlushAt = Number.NEGATIVE_INFINITY;

  // A peer that joins or leaves shows up at the next ring instead of up to refreshMs later. Optional:
  // where fs.watch is unavailable (or out of inotify watches) the refreshMs bound still holds.
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, () => (dirty = true));
    watcher.on('error', () => {
      swallow();
      watcher?.close();
      watcher = undefined;
    });
  } catch {
    swallow();
  }

  /** One readdir; deletes files of dead processes. Never rejects. */
  const refresh = (): Promise<void> =>
    (refreshing ??= (async () => {
      // Cleared before the read: a change the watcher reports during it makes the next flush read again.
      dirty = false;
      try {
        const next: number[] = [];
        for (const name of await readdir(dir)) {
          const match = PEER_FILE.exec(name);
          if (!match || name === ownFile) continue;
          const peerPid = Number(match[1]);
          if (!isAlive(peerPid)) {
            // Whoever finds a crashed process's file removes it; two finders racing is fine (ENOENT).
            unlink(join(dir, name)).catch((error: NodeJS.ErrnoException) => {
              if (error.code !== 'ENOENT') swallow();
            });
            continue;
          }
          next.push(Number(match[2]));
        }
        peers = next;
        stats.peers = next.length;
        peersAt = performance.now();
      } catch {
        swallow();
      } finally {
        refreshing = undefined;
      }
    })());

  /** Sends once coalesceMs have passed since the last flush began. */
  const schedule = (): void => {
    // Node starts a timer from the event loop's cached time, so after a long tick it fires early by
    // wall-clock time: flush checks the spacing again instead of trusting the timer.
    const delay = Math.max(0, Math.ceil(lastFlushAt + coalesceMs - performance.now()));
    flushTimer = setTimeout(() => void flush().catch(swallow), delay);
  };

  const flush = async (): Promise<void> => {
    if (performance.now() - lastFlushAt < coalesceMs) return schedule();
    flushTimer = undefined;
    lastFlushAt = performance.now();
    // A ring arriving from here on schedules another flush, so the last ring of a burst is never dropped.
    if (dirty || performance.now() - peersAt >= refreshMs) await refresh();
    if (closed) return;
    for (const port of peers) {
      try {
        socket.send(WAKE, port, '127.0.0.1', (error) => {
          if (error) swallow();
        });
        stats.sent++;
      } catch {
        swallow();
      }
    }
  };

  await refresh();

  return {
    ring() {
      if (closed || flushTimer) return;
      // Deferred even when due now: ring() stays O(1) inside an enqueue, and rings in the same tick
      // share one datagram. The timer is ref'd (at most coalesceMs) so a short-lived process that rings
      // just before it exits still sends.
      schedule();
    },
    onRing(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async close() {
      if (closed) return;
      closed = true;
      listeners.clear();
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = undefined;
      watcher?.close();
      await unlink(join(dir, ownFile)).catch(swallow);
      await new Promise<void>((resolve) => {
        try {
          socket.close(() => resolve());
        } catch {
          resolve(); // already closed
        }
      });
    },
    stats: () => ({ ...stats }),
  };
}
