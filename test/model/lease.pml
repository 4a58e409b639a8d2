/*
 * Leasehold's lease protocol for one task: claim, renew, complete, fail and recovery, with two workers
 * whose clocks may run behind real time, and a recovery sweep with a clock-skew margin. SPIN explores
 * every interleaving (a worker that pauses is simply one that does not run for a while).
 *
 * Parameters (spin -D...):
 *   MARGIN  recovery's skew margin: a lease counts as expired only when leaseUntil < now - MARGIN
 *   DELTA   how far worker 1's clock runs behind real time (worker 0 and recovery are on time)
 *   BUG     drop the fencing-token check from complete (the seeded bug the checker must catch)
 * Safety (checked by the monitor in every reachable state):
 *   1. at most one worker holds a lease that is unexpired by its own clock
 *   2. the task reaches a terminal state at most once
 *   3. attempts <= MAXATT
 *   4. no write is accepted from a token that a later claim replaced
 * Time moves in whole ticks, so a violation needs the skew to pass the margin by a full tick.
 */
#ifndef MARGIN
#define MARGIN 1
#endif
#ifndef DELTA
#define DELTA 1
#endif
#define L 3
#define TMAX 9
#define MAXATT 2
#define NONE 255

mtype = { QUEUED, RUNNING, SUCCESS, FAILED };
mtype status = QUEUED;
byte token = 0;
byte owner = NONE;
short leaseUntil = 0;
byte attempts = 0;
byte terminals = 0;
short now = 0;
/* Ghost: set if a write under a lease is ever accepted from a token that is no longer current. */
bool staleAccepted = false;

/* What each worker believes: the token of its claim and the end of its lease, by its own clock. */
bool holding[2];
byte myToken[2];
short myLease[2];

#define LOCAL(w) (now - ((w) == 1 -> DELTA : 0))
#define VALID(w) (holding[w] && LOCAL(w) < myLease[w])
/* The condition every write under a lease carries: this very claim still holds the task. */
#define HOLDS(w) (token == myToken[w] && owner == w && status == RUNNING)

active proctype clock() {
  do
  :: now < TMAX -> now++
  :: else -> break
  od
}

proctype worker(byte w) {
  do
  :: atomic { status == QUEUED && attempts < MAXATT ->
       status = RUNNING; token++; owner = w; attempts++;
       leaseUntil = LOCAL(w) + L; myToken[w] = token; myLease[w] = leaseUntil; holding[w] = true }
  :: atomic { VALID(w) ->                                   /* renew */
       if
       :: HOLDS(w) -> leaseUntil = LOCAL(w) + L; myLease[w] = leaseUntil
       :: else -> holding[w] = false
       fi }
  :: atomic { holding[w] ->                                 /* complete, possibly after a pause */
#ifdef BUG
       if
       :: status == RUNNING -> staleAccepted = staleAccepted || token != myToken[w]; status = SUCCESS; terminals++
       :: else -> skip
       fi;
#else
       if
       :: HOLDS(w) -> status = SUCCESS; terminals++
       :: else -> skip
       fi;
#endif
       holding[w] = false }
  :: atomic { holding[w] ->                                 /* fail: retry or give up */
       if
       :: HOLDS(w) && attempts < MAXATT -> status = QUEUED; owner = NONE
       :: HOLDS(w) && attempts >= MAXATT -> status = FAILED; terminals++
       :: else -> skip
       fi;
       holding[w] = false }
  :: atomic { holding[w] && !VALID(w) -> holding[w] = false }   /* its own view: the lease ran out */
  :: now >= TMAX -> break
  od
}

active proctype recovery() {
  do
  :: atomic { status == RUNNING && leaseUntil < now - MARGIN ->
       if
       :: attempts < MAXATT -> status = QUEUED; owner = NONE
       :: else -> status = FAILED; terminals++
       fi }
  :: now >= TMAX -> break
  od
}

init {
  run worker(0);
  run worker(1)
}

active proctype monitor() {
end_monitor:
  atomic { !(!(VALID(0) && VALID(1)) && terminals <= 1 && attempts <= MAXATT && !staleAccepted) -> assert(false) }
}
