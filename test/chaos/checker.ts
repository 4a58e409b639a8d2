/**
 * Checks the protocol's invariants (docs/architecture.md, 'Invariants and how they are kept'; the
 * list in docs/verification.md, 'What it checks') from the workers' histories and a final scan of the
 * table alone. Pure: it takes the records and returns the violations and the figures.
 */
import type { RateLimit } from '../../shared/rate-rules.js';
import { mostStartsInWindow } from '../support/rate-window.js';
import type { HistoryEvent } from './history.js';
import { checkFlows } from './flow-checks.js';

export type Recorded = HistoryEvent & { t: number; w: string; off: number };

export interface FinalTask {
  id: string;
  type: string;
  status: string;
  attempts: number;
  maxAttempts: number;
  leaseToken: number;
  /** The task's group, when it was enqueued with one. */
  group?: string;
  /** Its parent, when it is a child in a flow. */
  parentId?: string;
}

export interface CheckInput {
  history: Recorded[];
  tasks: FinalTask[];
  enqueued: string[];
  /** Harness events: when each worker was killed or paused. */
  kills: { worker: string; t: number }[];
  /**
   * Optional: every status change DynamoDB applied, as the fault proxy saw it on the wire (answered or
   * not). With it, "exactly one terminal state" is checked against what the table applied, not only
   * against what the writers recorded (a writer can apply a write it never hears of).
   */
  statusWrites?: {
    task: string;
    status: string;
    t: number;
    delivered: boolean;
    applied: 'yes' | 'unknown';
  }[];
  config: {
    leaseTimeoutMs: number;
    recoveryIntervalMs: number;
    clockSkewMs: number;
    requestDeadlineMs: number;
    limits: Record<string, number>;
    /** Rate limits by type: never more than `limit` starts (claims' `startedAt`) in any window of `intervalMs`. */
    rateLimits?: Record<string, RateLimit>;
    /** Group concurrency by type: never more valid leases of one group of it at once. */
    groupConcurrency?: Record<string, number>;
    maxClockOffsetMs?: number;
  };
}

export interface CheckResult {
  violations: { invariant: string; task?: string; detail: string }[];
  figures: {
    tasks: number;
    lost: number;
    doubleTerminals: number;
    /** Terminal states the table applied that no history recorded as accepted (known only with statusWrites). */
    terminalWritesUnrecorded: number;
    staleWritesAccepted: number;
    staleWritesRefused: number;
    overlappingLeases: number;
    handlerStartsPerTask: number;
    duplicateExecutionRate: number;
    recoveryLatencyMs: { p50: number; p99: number; max: number; count: number };
    peakConcurrency: Record<string, number>;
    /** The most starts of each rate-limited type in any window of its interval. */
    mostStartsPerWindow: Record<string, number>;
    /** The most valid leases of one group at once, by type. */
    peakGroupConcurrency: Record<string, number>;
    /** Parents in flows, and their children, whose invariants were checked (flow-checks.ts). */
    flows: { parents: number; children: number };
  };
}

type LeaseInterval = { type: string; from: number; to: number; task: string; token: number; w: string };

/** The most intervals that overlap at one instant, and such an instant (0 when none passes `limit`). */
function peakOverlap(intervals: LeaseInterval[], limit: number): { peak: number; at: number } {
  const points = intervals.flatMap((i) => [
    { t: i.from, d: 1 },
    { t: i.to, d: -1 },
  ]);
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let peak = 0;
  let at = 0;
  for (const p of points) {
    now += p.d;
    if (now > peak) peak = now;
    if (now > limit && at === 0) at = p.t;
  }
  return { peak, at };
}

const describeOverlap = (intervals: LeaseInterval[], at: number) =>
  intervals
    .filter((i) => i.from <= at && i.to > at)
    .map((i) => `${i.task.slice(0, 8)}#${i.token}@${i.w} [${i.from}, ${i.to}]`)
    .join(', ');

const TERMINAL = new Set(['SUCCESS', 'FAILED', 'CANCELLED']);

export function checkHistory(input: CheckInput): CheckResult {
  const { history, tasks, enqueued, kills, config } = input;
  const appliedByTask = new Map<
    string,
    { status: string; t: number; delivered: boolean; applied: 'yes' | 'unknown' }[]
  >();
  for (const w of input.statusWrites ?? [])
    appliedByTask.set(w.task, [...(appliedByTask.get(w.task) ?? []), w]);
  let terminalUnrecorded = 0;
  const violations: CheckResult['violations'] = [];
  const byTask = new Map<string, Recorded[]>();
  for (const e of [...history].sort((a, b) => a.t - b.t))
    byTask.set(e.task, [...(byTask.get(e.task) ?? []), e]);
  const finalById = new Map(tasks.map((t) => [t.id, t]));
  // A finished task no history mentions is checked too (with the table's record, its terminal write is still seen).
  for (const t of tasks) if (!byTask.has(t.id)) byTask.set(t.id, []);
  // A write is in flight at most a few deadlines (our own retries) before it is recorded.
  const inFlightSlack = 4 * config.requestDeadlineMs;

  // 1. Nothing lost: every task enqueued is in the table and finished.
  let lost = 0;
  for (const id of enqueued) {
    const t = finalById.get(id);
    if (!t || !TERMINAL.has(t.status)) {
      lost++;
      violations.push({
        invariant: 'no task lost',
        task: id,
        detail: t ? `ended the run ${t.status}` : 'missing from the table',
      });
    }
  }

  let doubleTerminals = 0;
  let staleAccepted = 0;
  let staleRefused = 0;
  let overlapping = 0;
  const intervals: LeaseInterval[] = [];

  for (const [id, events] of byTask) {
    const final = finalById.get(id);
    // 2. Exactly one terminal state: one accepted write that ended the task, and it is what the table shows.
    const terminalWrites = events.filter(
      (e) =>
        (e.ev === 'write' && e.outcome === 'ok' && TERMINAL.has(e.status ?? '')) ||
        (e.ev === 'recover' && e.action !== 'requeued'),
    );
    // A write whose answer never came (all retries failed, or its writer was killed while it was in
    // flight) may still have applied: its outcome is unknown.
    const answered = (e: Recorded) =>
      events.some(
        (x) =>
          x.ev === 'write' &&
          x.w === e.w &&
          x.token === (e as { token: number }).token &&
          x.outcome !== 'sent' &&
          x.t >= e.t,
      );
    // A claim or recovery fix sent by a writer that was killed afterwards may have applied unrecorded.
    const killedAfter = (e: Recorded) => kills.some((k) => k.worker === e.w && k.t >= e.t);
    // A recovery fix whose outcome its writer never recorded may have applied too: its write and the
    // read-back that settles a lost answer both failed, or a claim round that recovered a stranded task
    // (on taking over its expired slot) failed afterwards and its fixes went unreported. Each recorded
    // fix settles the earliest open intent of its writer; what stays open is unknown. Only intents
    // after the final token's claim can have ended the task.
    const finalClaimAt =
      events.find((e) => e.ev === 'claim' && final !== undefined && e.token === final.leaseToken)?.t ??
      Number.NEGATIVE_INFINITY;
    const openRecoverIntents = new Set<Recorded>();
    for (const e of events) {
      if (e.ev === 'intent' && e.op === 'recover') openRecoverIntents.add(e);
      if (e.ev === 'recover') {
        const settled = [...openRecoverIntents].find((i) => i.w === e.w && i.t <= e.t);
        if (settled) openRecoverIntents.delete(settled);
      }
    }
    const unknown = events.filter(
      (e) =>
        (e.ev === 'write' &&
          final !== undefined &&
          e.token === final.leaseToken &&
          (e.outcome === 'error' || (e.outcome === 'sent' && !answered(e)))) ||
        (e.ev === 'intent' && killedAfter(e)) ||
        (openRecoverIntents.has(e) && e.t >= finalClaimAt),
    );
    const story = () =>
      events
        .map(
          (e) =>
            `${e.ev}${'outcome' in e ? `:${e.outcome}` : ''}${'action' in e ? `:${e.action}` : ''}#${'token' in e ? e.token : ''}@${e.w}`,
        )
        .join(' ');
    if (input.statusWrites && final && TERMINAL.has(final.status)) {
      // The table's own record decides: exactly one applied write ended the task, it is what the
      // table shows, and no writer recorded more terminal writes accepted than were applied.
      const onWire = (appliedByTask.get(id) ?? []).filter((w) => TERMINAL.has(w.status));
      const applied = onWire.filter((w) => w.applied === 'yes');
      // A write DynamoDB never answered the proxy may have applied: it can stand in for the one.
      const explained =
        applied.length === 1
          ? applied[0]!.status === final.status
          : applied.length === 0 && onWire.some((w) => w.status === final.status);
      if (!explained || terminalWrites.length > 1 || terminalWrites.length > onWire.length) {
        doubleTerminals += applied.length > 1 || terminalWrites.length > 1 ? 1 : 0;
        const wire = onWire
          .map(
            (w) =>
              `${w.status}${w.applied === 'yes' ? '' : ' (outcome unknown)'}${w.delivered ? '' : ' (answer lost)'}`,
          )
          .join(', ');
        violations.push({
          invariant: 'exactly one terminal state',
          task: id,
          detail: `${applied.length} terminal writes applied [${wire}], ${terminalWrites.length} recorded as accepted; final ${final.status} token ${final.leaseToken}; ${story()}`,
        });
      } else if (terminalWrites.length === 0) terminalUnrecorded++;
    } else if (
      final &&
      TERMINAL.has(final.status) &&
      (terminalWrites.length > 1 || (terminalWrites.length === 0 && unknown.length === 0))
    ) {
      doubleTerminals += terminalWrites.length > 1 ? 1 : 0;
      violations.push({
        invariant: 'exactly one terminal state',
        task: id,
        detail: `${terminalWrites.length} terminal writes accepted; final ${final.status} token ${final.leaseToken}; ${story()}`,
      });
    }

    const claims = events
      .filter((e): e is Recorded & { ev: 'claim' } => e.ev === 'claim')
      .sort((a, b) => a.token - b.token);
    // 3. No write accepted from a token that a later claim had already replaced.
    for (const e of events) {
      const accepted =
        (e.ev === 'write' && e.outcome === 'ok') ||
        (e.ev === 'renew' && (e.outcome === 'renewed' || e.outcome === 'cancel-requested'));
      if (e.ev === 'write' && e.outcome === 'refused') staleRefused++;
      if (e.ev === 'renew' && e.outcome === 'lost') staleRefused++;
      if (!accepted || !('token' in e)) continue;
      const newer = claims.find((c) => c.token > e.token && c.t < e.t - inFlightSlack);
      if (newer) {
        staleAccepted++;
        violations.push({
          invariant: 'no write accepted from a non-current token',
          task: id,
          detail: `${e.ev} with token ${e.token} by ${e.w} accepted ${e.t - newer.t} ms after token ${newer.token} was claimed`,
        });
      }
    }

    // 4. Valid leases never overlap: each claim comes after the previous lease ended (by its holder's clock, within the skew bound).
    for (let k = 0; k < claims.length; k++) {
      const claim = claims[k]!;
      const ownEvents = events.filter((e) => 'token' in e && e.token === claim.token && e.w === claim.w);
      const leaseEnds = ownEvents.flatMap((e) =>
        'leaseUntil' in e && e.leaseUntil !== undefined && e.ev !== 'recover' ? [e.leaseUntil - e.off] : [],
      );
      // The lease ends when its holder's write lands: at the answer, or, for a write whose answer never
      // came, possibly as early as when it was sent.
      const closed = ownEvents.find((e) => e.ev === 'write' && (e.outcome === 'ok' || e.outcome === 'sent'));
      const end = Math.min(
        Math.max(claim.leaseUntil - claim.off, ...leaseEnds),
        closed ? closed.t : Number.POSITIVE_INFINITY,
      );
      intervals.push({
        type: final?.type ?? '?',
        from: claim.t,
        to: end,
        task: id,
        token: claim.token,
        w: claim.w,
      });
      const next = claims[k + 1];
      if (next && next.t < end - config.clockSkewMs - inFlightSlack) {
        overlapping++;
        violations.push({
          invariant: 'valid leases never overlap',
          task: id,
          detail: `token ${next.token} claimed ${end - next.t} ms before token ${claim.token}'s lease ended`,
        });
      }
    }
  }

  // 5. attempts <= maxAttempts.
  for (const t of tasks)
    if (t.attempts > t.maxAttempts)
      violations.push({
        invariant: 'attempts <= maxAttempts',
        task: t.id,
        detail: `${t.attempts} > ${t.maxAttempts}`,
      });

  // 6. Concurrency limits: valid leases of a limited type at once.
  const peakConcurrency: Record<string, number> = {};
  for (const [type, limit] of Object.entries(config.limits)) {
    const ofType = intervals.filter((i) => i.type === type);
    const { peak, at } = peakOverlap(ofType, limit);
    peakConcurrency[type] = peak;
    if (peak > limit)
      violations.push({
        invariant: 'concurrency limit never exceeded',
        detail: `${type}: ${peak} valid leases at once, limit ${limit}: ${describeOverlap(ofType, at)}`,
      });
  }

  // 6a. Groups: valid leases of one group of a type at once, never more than its groupConcurrency.
  const peakGroupConcurrency: Record<string, number> = {};
  const groupOf = new Map(tasks.flatMap((t) => (t.group === undefined ? [] : [[t.id, t.group] as const])));
  for (const [type, limit] of Object.entries(config.groupConcurrency ?? {})) {
    const byGroup = new Map<string, LeaseInterval[]>();
    for (const i of intervals) {
      const group = groupOf.get(i.task);
      if (i.type !== type || group === undefined) continue;
      byGroup.set(group, [...(byGroup.get(group) ?? []), i]);
    }
    peakGroupConcurrency[type] = 0;
    for (const [group, ofGroup] of byGroup) {
      const { peak, at } = peakOverlap(ofGroup, limit);
      peakGroupConcurrency[type] = Math.max(peakGroupConcurrency[type], peak);
      if (peak > limit)
        violations.push({
          invariant: 'group concurrency never exceeded',
          detail: `${type} group ${group}: ${peak} valid leases at once, limit ${limit}: ${describeOverlap(ofGroup, at)}`,
        });
    }
  }

  // 6b. Rate limits: the starts the claims wrote (`startedAt`, each in its writer's lease clock, as the
  // tokens compare them), never more than the limit in any window of the interval.
  const mostStartsPerWindow: Record<string, number> = {};
  const typeOf = new Map(tasks.map((t) => [t.id, t.type]));
  for (const [type, rate] of Object.entries(config.rateLimits ?? {})) {
    const starts = history.flatMap((h) =>
      h.ev === 'claim' && h.startedAt !== undefined && typeOf.get(h.task) === type ? [h.startedAt] : [],
    );
    const most = (mostStartsPerWindow[type] = mostStartsInWindow(starts, rate.intervalMs));
    if (most > rate.limit)
      violations.push({
        invariant: 'rate limit never exceeded',
        detail: `${type}: ${most} starts in a window of ${rate.intervalMs} ms, limit ${rate.limit}`,
      });
  }

  // 7. Every task whose holder was killed or paused is requeued, failed or cancelled by recovery within
  // leaseTimeout + recoveryInterval of the holder's death, plus a margin: the skew margin, the holder's
  // clock offset, one more recovery interval (the sweep that was running when the lease ran out, since
  // sweeps run one after another), and one request's worth of the SDK's backoff on throttling (a fix
  // is a query, a read and a write; any of them may be throttled by the injected faults),
  // unless the paused holder came back and finished it itself first.
  const latencies: number[] = [];
  const bound =
    config.leaseTimeoutMs +
    config.recoveryIntervalMs +
    config.clockSkewMs +
    (config.maxClockOffsetMs ?? 0) +
    config.recoveryIntervalMs +
    SDK_THROTTLING_BACKOFF_MS;
  for (const kill of kills) {
    for (const [id, events] of byTask) {
      const held = events
        .filter(
          (e): e is Recorded & { ev: 'claim' } => e.ev === 'claim' && e.w === kill.worker && e.t <= kill.t,
        )
        .at(-1);
      if (!held) continue;
      const sameLease = (e: Recorded) => 'token' in e && e.token === held.token;
      if (events.some((e) => sameLease(e) && e.ev === 'write' && e.outcome === 'ok' && e.t <= kill.t))
        continue;
      const resolved = events.find(
        (e) =>
          sameLease(e) && e.t > kill.t && ((e.ev === 'write' && e.outcome === 'ok') || e.ev === 'recover'),
      );
      if (!resolved || resolved.ev !== 'recover') continue; // finished by its holder after a pause, or never re-run (checked as lost)
      const latency = resolved.t - kill.t;
      latencies.push(latency);
      if (latency > bound)
        violations.push({
          invariant: 'recovered within leaseTimeout + recoveryInterval',
          task: id,
          detail: `recovered ${latency} ms after its holder ${kill.worker} stopped (bound ${bound} ms)`,
        });
    }
  }
  // 8. Flows: checked against the table's record of status changes (without it, against none).
  const flows = checkFlows(tasks, input.statusWrites ?? []);
  violations.push(...flows.violations);

  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  const starts = history.filter((e) => e.ev === 'start').length;
  const finished = tasks.length || 1;
  return {
    violations,
    figures: {
      tasks: enqueued.length,
      lost,
      doubleTerminals,
      terminalWritesUnrecorded: terminalUnrecorded,
      staleWritesAccepted: staleAccepted,
      staleWritesRefused: staleRefused,
      overlappingLeases: overlapping,
      handlerStartsPerTask: starts / finished,
      // Every start beyond the first of a task: retries after failures, and re-runs after kills and pauses.
      duplicateExecutionRate: starts / finished - 1,
      recoveryLatencyMs: { p50: pct(50), p99: pct(99), max: latencies.at(-1) ?? 0, count: latencies.length },
      peakConcurrency,
      mostStartsPerWindow,
      peakGroupConcurrency,
      flows: { parents: flows.parents, children: flows.children },
    },
  };
}

/**
 * The longest the SDK waits between the attempts of one throttled request: its retry policy (2026
 * defaults, 3 attempts) waits up to 1 s after the first and up to 2 s after the second.
 */
export const SDK_THROTTLING_BACKOFF_MS = 3_000;
