/**
 * Gives one execution environment's process its share of CPU (cpu-share.ts), by the best means this
 * machine has:
 * - a cgroup v1 `cpu` group (cpu.cfs_quota_us / cpu.cfs_period_us) or a cgroup v2 group (cpu.max),
 *   made per environment under `leasehold-sim/` beside the sim's own group; the process is started by
 *   a shell that first writes its own pid into the group and then execs node, so even its init runs
 *   within the quota; the group is removed once the process is gone;
 * - else a duty cycle: SIGCONT for the share of every 100 ms, SIGSTOP for the rest. It runs only while
 *   the environment is running (init or an invocation): a frozen environment is never thawed by it.
 * Or nothing, when the sim is asked for no limit.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CFS_PERIOD_US, cfsQuotaUs, dutyCycle, vcpuShare } from './cpu-share.js';

export type CpuLimitMethod = 'cgroup-v1' | 'cgroup-v2' | 'duty-cycle' | 'none';

export interface CpuLimit {
  readonly method: CpuLimitMethod;
  /** The command that starts the process inside its limit. */
  wrap(command: string, args: string[]): { command: string; args: string[] };
  /** The process started (its pid). */
  attach(pid: number): void;
  /** The environment runs (init, an invocation) or is frozen: only a running one is duty-cycled. */
  setRunning(running: boolean): void;
  /** The process is gone: remove what was made for it. */
  release(): void;
}

interface CgroupRoot {
  version: 1 | 2;
  /** Where the sim makes one group per environment. */
  base: string;
}

let detected: CgroupRoot | null | undefined;

/** The sim's own cgroup path for a controller, from /proc/self/cgroup (v1: the line naming `cpu`; v2: `0::`). */
function ownPath(version: 1 | 2): string {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, path] = line.split(':') as [string, string, string];
      if (version === 1 && controllers?.split(',').includes('cpu')) return path;
      if (version === 2 && line.startsWith('0::')) return path;
    }
  } catch {
    // not Linux
  }
  return '/';
}

/** Groups left by sims that died without cleaning up (named <pid>-<environment>): removed if empty. */
function sweep(base: string): void {
  for (const name of readdirSync(base)) {
    const pid = Number(name.split('-')[0]);
    let alive = false;
    try {
      process.kill(pid, 0);
      alive = true;
    } catch {
      // gone
    }
    if (!alive) {
      try {
        rmdirSync(join(base, name));
      } catch {
        // still has processes, or not ours
      }
    }
  }
}

function tryRoot(version: 1 | 2, mount: string): CgroupRoot | null {
  const base = join(mount, ownPath(version), 'leasehold-sim');
  try {
    mkdirSync(base, { recursive: true });
    if (version === 2) {
      // The parent must hand the cpu controller down to the sim's groups, and they to each environment's.
      writeFileSync(join(base, '..', 'cgroup.subtree_control'), '+cpu');
      writeFileSync(join(base, 'cgroup.subtree_control'), '+cpu');
    }
    // On Lambda an environment has its share to itself; here the environments' groups compete with
    // everything else on the host (DynamoDB Local, test runners), one weight for all of them. The
    // highest weight gives each its quota first; the quotas still cap them, so nothing else starves
    // beyond their sum. (Without it a busy host stretched a 256 MB init past Lambda's 10 s.)
    writeFileSync(
      join(base, version === 1 ? 'cpu.shares' : 'cpu.weight'),
      version === 1 ? '262144' : '10000',
    );
    sweep(base);
    return { version, base };
  } catch {
    return null;
  }
}

function detect(): CgroupRoot | null {
  if (detected !== undefined) return detected;
  detected = null;
  if (process.platform !== 'linux') return detected;
  if (existsSync('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')) detected = tryRoot(1, '/sys/fs/cgroup/cpu');
  else if (
    existsSync('/sys/fs/cgroup/cgroup.controllers') &&
    readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8').split(/\s+/).includes('cpu')
  )
    detected = tryRoot(2, '/sys/fs/cgroup');
  return detected;
}

const noLimit: CpuLimit = {
  method: 'none',
  wrap: (command, args) => ({ command, args }),
  attach: () => undefined,
  setRunning: () => undefined,
  release: () => undefined,
};

function cgroupLimit(root: CgroupRoot, id: string, share: number): CpuLimit | undefined {
  const dir = join(root.base, `${process.pid}-${id}`);
  const quota = cfsQuotaUs(share);
  try {
    mkdirSync(dir);
    if (root.version === 1) {
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
    } else writeFileSync(join(dir, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`);
  } catch {
    return undefined;
  }
  return {
    method: root.version === 1 ? 'cgroup-v1' : 'cgroup-v2',
    // `sh -c 'echo $$ > procs; exec "$@"'`: the shell joins the group, then becomes the process (should
    // joining fail, the function still runs, unlimited, and the shell's error is in its log).
    wrap: (command, args) => ({
      command: '/bin/sh',
      args: ['-c', 'echo $$ > "$0"; exec "$@"', join(dir, 'cgroup.procs'), command, ...args],
    }),
    attach: () => undefined,
    setRunning: () => undefined,
    release: () => {
      try {
        rmdirSync(dir);
      } catch {
        // already gone, or its process is not quite gone yet: the next sim's sweep removes it
      }
    },
  };
}

/** The fallback, exported for its test: a machine with writable cgroups never uses it otherwise. */
export function dutyCycleLimit(share: number): CpuLimit {
  const cycle = dutyCycle(share);
  if (!cycle) return { ...noLimit, method: 'duty-cycle' };
  let pid: number | undefined;
  let running = true;
  let stopTimer: NodeJS.Timeout | undefined;
  const signal = (s: NodeJS.Signals) => {
    try {
      if (pid) process.kill(pid, s);
    } catch {
      // the process ended
    }
  };
  // Stops the process once its run is over (it runs now: thawed by a tick, or by the environment).
  const stopAfterRun = () => {
    clearTimeout(stopTimer);
    stopTimer = setTimeout(() => {
      // Checked again: the environment may have been frozen (or thawed for good) meanwhile.
      if (running) signal('SIGSTOP');
    }, cycle.runMs);
    stopTimer.unref();
  };
  const cycleFromNow = () =>
    setInterval(() => {
      if (!pid || !running) return;
      signal('SIGCONT');
      stopAfterRun();
    }, cycle.runMs + cycle.stopMs).unref();
  let tick = cycleFromNow();
  return {
    method: 'duty-cycle',
    wrap: (command, args) => ({ command, args }),
    attach: (p) => void (pid = p),
    setRunning: (r) => {
      running = r;
      if (!r) return;
      // Thawed (the environment sends SIGCONT, never this): the cycle starts over with this run.
      clearInterval(tick);
      tick = cycleFromNow();
      stopAfterRun();
    },
    release: () => {
      clearInterval(tick);
      clearTimeout(stopTimer);
      pid = undefined;
    },
  };
}

/** The CPU limit for one environment of a function with this memory; `enabled: false` gives none. */
export function cpuLimitFor(id: string, memoryMb: number, enabled = true): CpuLimit {
  if (!enabled) return noLimit;
  const share = vcpuShare(memoryMb);
  const root = detect();
  return (root && cgroupLimit(root, id, share)) ?? dutyCycleLimit(share);
}

/** How this machine limits CPU (for notices and /state). */
export function cpuLimitMethod(enabled = true): CpuLimitMethod {
  if (!enabled) return 'none';
  const root = detect();
  return root ? (root.version === 1 ? 'cgroup-v1' : 'cgroup-v2') : 'duty-cycle';
}
