/**
 * The chaos harness's own entry point: a local stack process (`--worker` and/or `--recovery`) with
 * the harness's instruments wired in from outside production: a clock offset (skew within and beyond
 * the margin), a history file the checker reads, and optionally the seeded bug. The harness passes
 * them as CHAOS_* variables; the stack's own settings come from LEASEHOLD_* as in `leasehold serve`.
 */
import { systemClock } from '../../shared/clock.js';
import { banner, startStack, type Roles } from '../../tools/local/stack.js';
import { fileHistory, recordHistory } from './history.js';
import { completingWithoutToken } from './seeded-bug.js';

const args = process.argv.slice(2);
const roles: Roles = {
  api: args.includes('--api'),
  worker: args.includes('--worker'),
  recovery: args.includes('--recovery'),
};
const offsetMs = Number(process.env.CHAOS_CLOCK_OFFSET_MS ?? 0);
const historyFile = process.env.CHAOS_HISTORY_FILE;
const seededBug = process.env.CHAOS_SEEDED_BUG === 'complete-without-token';

const stack = await startStack({
  env: process.env,
  roles,
  harness: {
    clock: systemClock(offsetMs),
    ...(historyFile
      ? {
          observe: (events, writer) => void recordHistory(events, fileHistory(historyFile, writer, offsetMs)),
        }
      : {}),
    ...(seededBug ? { leaseStore: completingWithoutToken } : {}),
  },
});
for (const line of banner(stack, roles, stack.app.config.dataDir)) process.stdout.write(`${line}\n`);
const stop = () => void stack.stop().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
