/**
 * A second process on a wake channel, for test/local-wake-channel.test.ts:
 *
 * - `node --import tsx test/support/wake-peer.ts <dir>` prints `ready` once registered and `rung` each
 *   time another process rings, ringing back at once so the test sees both directions. It closes its
 *   channel (removing its file) and exits when stdin ends, or after 20 s so a stuck test leaves nothing.
 * - `... <dir> ring-once` rings once and leaves its channel open without doing anything else: the
 *   process must still exit by itself (the channel keeps nothing alive) and the ring must still go out.
 */
import { openWakeChannel } from '../../tools/local/wake-channel.js';

const [dir, mode] = process.argv.slice(2);
if (!dir) throw new Error('usage: wake-peer.ts <dir> [ring-once]');
const channel = await openWakeChannel({ dir });
if (mode === 'ring-once') {
  channel.ring();
  console.log('rang');
} else {
  channel.onRing(() => {
    console.log('rung');
    channel.ring();
  });
  const exit = () => void channel.close().finally(() => process.exit(0));
  process.stdin.on('end', exit).resume();
  setTimeout(exit, 20_000).unref();
  console.log('ready');
}
