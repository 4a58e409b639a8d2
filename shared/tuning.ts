/**
 * The claim path's and the Lambda fleet's tuning, each value with its reason: what they batch, how
 * long they wait, how far ahead they look. What a deployment chooses (lease timeout, poll interval,
 * worker concurrency, the fleet's cap) is configuration (config.ts); these follow from DynamoDB's and
 * Lambda's behaviour and from the measurements named beside them, and change only with those.
 */
export const TUNING = {
  /** How a claim round reads the ready index (store/claim.ts, store/claim-state.ts). */
  claim: {
    /**
     * Contended, a worker picks at random among this many times more heads than it needs (and takes
     * at most this fraction of a thin partition): two workers on one partition then mostly pick
     * different tasks. Index entries are keys only, so a wider read costs little (100 heads are about
     * 2 read units, eventually consistent).
     */
    contendedWindowFactor: 8,
    /** The most heads one read takes in (a page of about 2 read units). */
    maxWindow: 100,
    /**
     * A query is billed per 4 KB read, and a keys-only head is about 100 bytes: reading 32 heads costs
     * what reading one does. The heads not taken now are kept for the next rounds (spares).
     */
    minWindow: 32,
    /**
     * How many partitions each wave of a round reads at once; after these, `laterWave` at a time. Small
     * at first: a worker with work fills its room from one or two partitions and reads no more than it
     * did one at a time (the benchmark's queries per task and lost races hold), while a worker looking
     * for one new task has the kick's hint for it (read beside the lanes). Bounded: a hundred queries
     * at once make each wait behind the others (an emulator answers them one by one), and a read past
     * its deadline fails the round.
     */
    readWaves: [1, 1, 2, 4] as readonly number[],
    laterWave: 8,
    /** DynamoDB's IN takes at most 100 values: a worker serving more types claims due tasks through their promotion. */
    maxInValues: 100,
    /** Partitions a round reads first on a hint: beyond these, a burst has spread over every shard anyway. */
    maxHints: 4,
    /** Ready tasks offered by key that a worker keeps (a burst of enqueues beyond it is found by reads). */
    maxOffered: 64,
    /**
     * With more places than partitions, a placed worker leaves the heads of another place's slice to
     * their owner until it has seen them wait this long once, plus once for each place ahead of it in
     * the head's line (claim-plan.ts othersHeadWaitMs). An owner with room takes its heads within a
     * round trip or two; one that leaves them longer is busy, or gone. At 100 ms the contention
     * benchmark's 32 workers lost 0.015 races per claim, at 150 ms 0.005-0.01.
     */
    othersHeadStepMs: 150,
    /**
     * The most steps any visitor waits (claim-plan.ts othersHeadWaitMs): 1.2 s. At 4 steps the
     * contention benchmark's 32 workers lost 0.014-0.025 races per claim, at 8 0.010-0.016.
     */
    othersHeadMaxSteps: 8,
    /** Heads of other places a worker remembers having seen (a few partitions' reads). */
    maxOthersSeen: 4_096,
    /** Rounds without a lost race after which a worker counts as calm again. */
    calmAfterRounds: 8,
  },

  /** A worker's polls (worker/poll-rules.ts). */
  poll: {
    /** After an expected burst's instant, how long a run keeps looking often (the promotions take a moment). */
    expectedWorkWindowMs: 3_000,
    /** How often it looks within that window. */
    expectedWorkPollMs: 50,
    /** The longest an idle worker with a short poll interval waits between rounds. */
    idleCeilingMs: 1_000,
  },

  /** Kicks: an enqueue (or a sweep that readied tasks) starting a worker invocation (fleet/enqueue-kicker.ts). */
  kick: {
    /** The most tasks one kick hands over by key (more in one interval: the started invocation reads on). */
    maxOffers: 64,
    /** The longest an enqueue's answer waits for its kick to be sent (an async Invoke answers in tens of ms). */
    answerWaitMs: 300,
    /** An Invoke must not hold up the enqueue that asked for it: past this, the kick is given up. */
    invokeDeadlineMs: 1_000,
    /** Attempts per Invoke, and the waits between them (the caller's deadline cuts them short). */
    invokeAttempts: 3,
    invokeBackoffMs: [50, 150] as readonly number[],
    /**
     * Ready work younger than this when recovery read it is its kick's: an enqueue kicks an invocation
     * that takes the task by key within a second or so, and a tick that read every partition for it
     * (a full worker run, as at 1 task a second a sweep often catches one task between its enqueue and
     * its claim) would cost more than all the kicks of that minute. Work older than this was missed by
     * its kick (a lost Invoke, a ring nobody answered) and the tick runs for it.
     */
    workGraceMs: 10_000,
  },

  /** The fleet's seats and how it grows (fleet/fleet-seats.ts, fleet/fleet-scaler.ts, fleet/ring-gate.ts). */
  fleet: {
    /**
     * A holder that learns of a ring as it gives its seat back answers it itself (warm) with at least
     * this much time left: a round of claims and a short task fit, and a type that no longer fits is
     * handed on as any run's is (claiming over). With less, it starts an invocation that answers it.
     */
    answerInPlaceMinRemainingMs: 60_000,
    /**
     * Seat 0 is the timekeeper's: its holder also promotes delayed tasks and retries when they fall
     * due, so one invocation (not every one) reads the delay partitions every poll.
     */
    timekeeperSeat: 0,
    /**
     * A seat reserved for an invocation being started (a scale-up, a burst's prewarm) waits this long
     * for it to take the seat over: a cold start on a busy account, with room to spare. An Invoke that
     * never starts anything holds a seat this long at most.
     */
    reservationMs: 30_000,
    /**
     * How many times an invocation started for work that found no seat reads the seats and tries to
     * take or ring one (fleet-seats.ts, takeOrRing). A refused ring means that seat changed hands after
     * the read: a holder answering a ring warm gives its seat back and takes it again within
     * milliseconds, so one look can race it (the kicked task then waited for the next tick); three
     * refused looks in a row would need that to happen every time.
     */
    takeOrRingLooks: 3,
    /** The longest an invocation that polls goes without reading the ready partitions. */
    safetyReadMs: 30_000,
    /** How often one worker may add an invocation: about a cold start, so the fleet grows as fast as it can start. */
    scaleIntervalMs: 1_000,
    /**
     * How deep a chain of self-started invocations (scale-ups, hand-overs, prewarms) grows before every
     * further start must hold a seat reserved for it. Lambda's own loop detection would stop such a
     * chain at about its 16th hop; the worker sets RecursiveLoop to Allow (the fleet is a loop on
     * purpose: a backlog at the cap is refilled by invocations started from invocations, one hop a
     * lifetime, for as long as it lasts) and bounds the loop itself instead: past this generation, an
     * invocation is started only into a seat it already owns, so a chain never runs more invocations
     * than the cap has seats.
     */
    chainGenerationBound: 16,
    /** The scheduled tick comes every minute (cdk/schedules.ts). */
    scheduledTickIntervalMs: 60_000,
    /** EventBridge Scheduler's start jitter plus a sweep's own duration, with room to spare. */
    tickAndSweepSlackMs: 10_000,
  },

  /** The recovery minute's gauges (store/gauge-rotation.ts, store/queue-depth.ts). */
  gauge: {
    /**
     * Shards of a type found empty that each sweep reads (with its lane): a quarter, so every shard is
     * read at least every fourth minute. At 0.1 task a second with five types, reading every shard of
     * every type was 85 of the minute's 117 queries: about 7 of a task's 9.8 read units; a ready task is
     * kicked when enqueued, so the gauge finds only the rare one whose kick was lost, a few minutes late.
     */
    idleTypeShardsPerSweep: 4,
  },

  /** The timekeeper, each process's owner of promotion (worker/timekeeper.ts; seat 0's in fleet/fleet-invocation.ts). */
  timekeeper: {
    /**
     * The fastest the delay partitions are read again: sixteen queries a read, so not at a worker's
     * poll interval when that is tiny (tests, local tuning). A task delayed by less than this and
     * enqueued just after a read is promoted up to this late.
     */
    minRefreshMs: 1_000,
    /** The most due entries one read takes in (ids only: about 60 bytes each). */
    readLimit: 20_000,
    /** The entries the last look reads: enough to see past the ones this timekeeper just promoted. */
    lastLookLimit: 100,
    /** A timer may fire a little early by the wall clock: aim this far past the due time. */
    pastDueMs: 2,
    /** Promotions in flight at once: enough to ready thousands a second, few enough not to starve the lease path. */
    promoteConcurrency: 64,
    /**
     * How long after a promotion applied a read may still list the task: the delay partitions are an
     * eventually consistent index (its lag is normally well under a second). A read sent before the
     * promotion applied, or within this after it, may list it although it is ready; each such entry
     * queued again would cost a failed conditional write (for a burst, one per task per stale read). A
     * read sent later is believed: a task released back to its old due time (a worker whose clock is
     * behind re-files it there) is then promoted again, this much later at most.
     */
    indexLagMs: 2_000,
    /**
     * How long after giving seat 0 back its holder reads the delay partitions once more. An enqueue
     * whose kick saw seat 0 held starts no timekeeper (one keeps time), and that timekeeper's last
     * refresh may have missed the task: sent before the task was written, or before the eventually
     * consistent delay index showed it (well under a second as a rule; the sim draws up to 500 ms).
     * That task was written before the seat was given back, so a read this long after the release
     * lists it, and the holder hands over instead of leaving it to the next sweep, up to two minutes
     * late (found by the sim with index lag and CPU by memory: a task delayed by 8 s started 50 to 96 s
     * late).
     */
    lastLookDelayMs: 1_000,
    /** The last look is skipped with less time than this left: its wait (1 s), a read and an Invoke. */
    lastLookMinRemainingMs: 5_000,
  },

  /** Many delayed tasks due at one instant (worker/timekeeper.ts). */
  burst: {
    /** A second in which at least this many tasks fall due is a burst worth starting workers ahead for. */
    minTasks: 64,
    /** How long ahead of a burst its workers are started: a cold start and a seat, with room to spare. */
    prewarmLeadMs: 5_000,
    /**
     * How often the timekeeper looks at what the workers left of a burst they claim straight from its
     * delay partition; what they stopped taking (a worker that failed to start, a type they may not
     * take that way) is promoted then. A promotion is a second write, and one racing those claims a
     * failed one.
     */
    graceMs: 1_000,
    /** However slowly the workers progress, what is left of a burst this long after its instant is promoted. */
    maxDeferMs: 30_000,
  },
} as const;
