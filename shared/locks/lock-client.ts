/**
 * Distributed locks on the task table: a lock is an item with a holder, a lease
 * and a fencing token that grows with every acquisition of that key. Two modes: a fixed lease that
 * simply runs out, and auto-renewal every lease/3 while held. Release and renewal need the holder's
 * own token, so a holder paused past its lease cannot touch the lock of the one who took it over.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { systemClock, type Clock } from '../clock.js';
import type { LeaseholdConfig } from '../config.js';
import { LeaseholdError } from '../errors.js';
import { mathRandom, randomId, type IdGenerator } from '../ids.js';
import { recoveryCutoff } from '../lease-rules.js';
import { lockFreeToTake } from '../store/conditions.js';
import type { WriteTarget } from '../store/conditional-write.js';
import { parseInput } from '../task-inputs.js';
import {
  acquireOrUndo,
  releaseIfHolder,
  renewIfHolder,
  type HeldLease,
  type LeaseItem,
} from '../store/lease-item.js';

export const lockOptionsSchema = z
  .object({
    leaseMs: z
      .number()
      .int('must be whole milliseconds')
      .min(100, 'must be at least 100 ms')
      .max(86_400_000, 'must be at most a day'),
    mode: z.enum(['fixed', 'auto-renew']),
    /** More tries after the first when the lock is busy (3 tries, 500 ms apart, is `retries: 2`). */
    retries: z.number().int().min(0).max(100).default(0),
    retryDelayMs: z.number().int().min(0).max(60_000).default(500),
  })
  .strict();
export type LockOptions = z.input<typeof lockOptionsSchema>;
const lockKeySchema = z.string().min(1, 'must not be empty').max(512, 'must be at most 512 characters');

/** The lock is held by someone else (after the retries asked for). */
export class LockNotAcquiredError extends LeaseholdError {
  override name = 'LockNotAcquiredError';
  override readonly code = 'LOCK_NOT_ACQUIRED';
  override readonly status = 409;
  constructor(
    readonly key: string,
    readonly current: { holder?: string; leaseUntil?: number; token?: number } | undefined,
  ) {
    super(
      `Lock "${key}" is held${current?.holder ? ` by ${current.holder} until ${new Date(current.leaseUntil ?? 0).toISOString()}` : ''}; try again later.`,
    );
  }
}

/** Why a held lock's signal aborted. */
export class LockLostError extends LeaseholdError {
  override name = 'LockLostError';
  override readonly code = 'LOCK_LOST';
  override readonly status = 409;
  constructor(
    readonly key: string,
    readonly reason: 'expired' | 'taken-over' | 'renewal-failed' | 'released',
  ) {
    super(`Lock "${key}" is no longer held: ${reason}.`);
  }
}

type LockItem = Pick<LeaseItem, 'holder' | 'leaseUntil' | 'lockToken'>;

export interface Lock {
  key: string;
  holder: string;
  /** Fencing token: larger for every later acquisition of this key. Pass it to what the lock guards. */
  token: number;
  /** Aborts when the lock is lost: the fixed lease ran out, or a renewal failed or found it taken over. */
  signal: AbortSignal;
  /** When the lease runs out unless renewed (epoch ms, from the lock client's clock). */
  readonly leaseUntil: number;
  /** True once the lease has run out by this holder's clock (a fixed-lease holder checks this). */
  expired(): boolean;
  /** Gives the lock back; false if it was no longer ours (expired and taken over). */
  release(): Promise<boolean>;
}

export interface LockClientOptions {
  doc: DynamoDBDocumentClient;
  config: Pick<LeaseholdConfig, 'tableName' | 'clockSkewMs' | 'requestDeadlineMs'>;
  clock?: Clock;
  newId?: IdGenerator;
}

const lockKey = (key: string) => ({ pk: `LOCK#${key}`, sk: 'LOCK' });

export class LockClient {
  private readonly clock: Clock;
  private readonly newId: IdGenerator;
  private readonly target: WriteTarget;

  constructor(options: LockClientOptions) {
    this.clock = options.clock ?? systemClock();
    this.newId = options.newId ?? randomId;
    this.target = {
      doc: options.doc,
      tableName: options.config.tableName,
      deadlineMs: options.config.requestDeadlineMs,
      newId: this.newId,
      random: mathRandom,
    };
    this.config = options.config;
  }

  private readonly config: LockClientOptions['config'];

  async acquire(key: string, rawOptions: LockOptions): Promise<Lock> {
    parseInput(lockKeySchema, 'acquire', key);
    const options = parseInput(lockOptionsSchema, 'acquire', rawOptions);
    for (let attempt = 0; ; attempt++) {
      const lock = await this.tryAcquire(key, options);
      if ('lock' in lock) return lock.lock;
      if (attempt >= options.retries) throw new LockNotAcquiredError(key, lock.current);
      await new Promise((r) => setTimeout(r, options.retryDelayMs));
    }
  }

  /** Runs `fn` under the lock and always releases it, whether `fn` returns or throws. */
  async withLock<T>(key: string, options: LockOptions, fn: (lock: Lock) => Promise<T> | T): Promise<T> {
    const lock = await this.acquire(key, options);
    try {
      return await fn(lock);
    } finally {
      await lock.release();
    }
  }

  private async tryAcquire(
    key: string,
    options: z.output<typeof lockOptionsSchema>,
  ): Promise<{ lock: Lock } | { current: LockItem | undefined }> {
    const now = this.clock.now();
    const holder = this.newId();
    const leaseUntil = now + options.leaseMs;
    const free = lockFreeToTake(recoveryCutoff(now, this.config));
    // Perhaps taken under a holder id only this call knows: undone if so, so the lock is not held by nobody.
    const taken = await acquireOrUndo(this.target, lockKey(key), {
      tokenAttribute: 'lockToken',
      holder,
      leaseUntil,
      free,
      needCurrent: true,
    });
    if (!taken.applied) return { current: taken.current };
    return {
      lock: this.held(
        key,
        { tokenAttribute: 'lockToken', holder, token: taken.item.lockToken! },
        leaseUntil,
        options,
      ),
    };
  }

  private held(
    key: string,
    lease: HeldLease,
    firstLeaseUntil: number,
    options: z.output<typeof lockOptionsSchema>,
  ): Lock {
    const controller = new AbortController();
    let leaseUntil = firstLeaseUntil;
    let timer: NodeJS.Timeout | undefined;
    // Set by release(): from then on nothing re-arms a timer, whatever answer is still on its way.
    let released = false;
    const arm = (fn: () => void, ms: number) => {
      if (released || controller.signal.aborted) return;
      // A lock never keeps the process alive: a holder that exits without release() lets it run out.
      timer = setTimeout(fn, ms).unref();
    };
    const lose = (reason: LockLostError['reason']) => {
      clearTimeout(timer);
      timer = undefined;
      if (!controller.signal.aborted) controller.abort(new LockLostError(key, reason));
    };
    const renew = async () => {
      const next = this.clock.now() + options.leaseMs;
      try {
        const renewed = await renewIfHolder(this.target, lockKey(key), lease, next);
        if (!renewed.applied) return lose('taken-over');
        leaseUntil = next;
      } catch {
        // Unknown whether it applied; keep trying until our own view says the lease ran out.
        if (this.clock.now() >= leaseUntil) return lose('renewal-failed');
      }
      arm(() => void renew(), options.leaseMs / 3);
    };
    const expireAt = () => {
      // A timer may fire a little early: look at the clock before calling the lease expired.
      const left = leaseUntil - this.clock.now();
      if (left > 0) arm(expireAt, left);
      else lose('expired');
    };
    if (options.mode === 'auto-renew') arm(() => void renew(), options.leaseMs / 3);
    else arm(expireAt, Math.max(0, leaseUntil - this.clock.now()));
    const { holder, token } = lease;

    return {
      key,
      holder,
      token,
      signal: controller.signal,
      get leaseUntil() {
        return leaseUntil;
      },
      expired: () => this.clock.now() >= leaseUntil,
      release: async () => {
        released = true;
        clearTimeout(timer);
        timer = undefined;
        const given = await releaseIfHolder(this.target, lockKey(key), lease);
        if (!controller.signal.aborted)
          controller.abort(new LockLostError(key, given.applied ? 'released' : 'taken-over'));
        return given.applied;
      },
    };
  }
}
