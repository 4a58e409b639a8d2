/**
 * The sim's Lambda CPU: an execution environment gets the CPU share of its memory (1,769 MB = one
 * vCPU), through a cgroup where the machine has a writable one (this one and CI's: cgroup v1) or a
 * SIGSTOP/SIGCONT duty cycle that never thaws a frozen environment; a cold start reports its Init
 * Duration as Lambda's REPORT line does.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { cpuLimitMethod, dutyCycleLimit } from '../tools/sim/lambda/cpu-limiter.js';
import { cfsQuotaUs, dutyCycle, vcpuShare } from '../tools/sim/lambda/cpu-share.js';
import type { ExecutionEnvironment } from '../tools/sim/lambda/execution-environment.js';
import { environmentStarter, invokeSettled, writeBundle } from './support/sim-lambda-fixtures.js';

// The same CPU-bound work at any memory size: its wall time is what the share changes.
const root = writeBundle(
  'sim-lambda-cpu-',
  `
exports.handler = async (event) => {
  const started = Date.now();
  let x = 0;
  for (let i = 0; i < event.iterations; i++) x = (x + Math.sqrt(i)) % 1e9;
  return { ms: Date.now() - started, x, cgroup: require('node:fs').readFileSync('/proc/self/cgroup', 'utf8') };
};
`,
);

const start = environmentStarter(root);
const environment = (memoryMb: number, log: string[] = []) =>
  start({ name: `cpu-${memoryMb}`, timeoutMs: 30_000, memoryMb }, log);

async function run(e: ExecutionEnvironment, event: unknown): Promise<{ ms: number; cgroup: string }> {
  return JSON.parse((await invokeSettled(e, event)).payload) as { ms: number; cgroup: string };
}

/** utime + stime of a process, in ms (clock ticks of 10 ms). */
const cpuMsOf = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const stateOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0];

describe('CPU in proportion to memory', () => {
  it('the rules: 1,769 MB is one vCPU, 256 MB about 0.145; quotas and duty cycles from the share', () => {
    expect(vcpuShare(1769)).toBe(1);
    expect(vcpuShare(256)).toBeCloseTo(0.145, 3);
    expect(cfsQuotaUs(vcpuShare(256))).toBe(2_894);
    expect(cfsQuotaUs(vcpuShare(256), 100_000)).toBe(14_471);
    expect(cfsQuotaUs(0.001)).toBe(1_000);
    expect(dutyCycle(vcpuShare(256))).toEqual({ runMs: 14, stopMs: 86 });
    expect(dutyCycle(vcpuShare(3538))).toBeUndefined();
  });

  it('the same CPU-bound work takes several times longer at 128 MB than at 1,769 MB', async () => {
    const log: string[] = [];
    const small = await environment(128, log);
    const large = await environment(1769);
    // Warm both (the JIT), then time the same work in each, one at a time.
    await run(small, { iterations: 1e5 });
    await run(large, { iterations: 1e5 });
    const fast = await run(large, { iterations: 1e7 });
    const slow = await run(small, { iterations: 1e7 });
    // 128 MB has 1/13.8 of 1,769 MB's CPU; well under that ratio still fails an unlimited sim (about 1).
    expect(slow.ms / Math.max(fast.ms, 1)).toBeGreaterThan(4);
    if (cpuLimitMethod().startsWith('cgroup')) expect(slow.cgroup).toContain('leasehold-sim');
    // The cold start reported its init phase, as Lambda's REPORT line does; the warm ones do not.
    const reports = log.filter((l) => l.startsWith('REPORT'));
    expect(reports[0]).toMatch(/\tInit Duration: \d+\.\d{2} ms/);
    expect(reports.slice(1).some((l) => l.includes('Init Duration'))).toBe(false);
  });

  it("a 256 MB function's cold start stays well within Lambda's 10 s init limit", async () => {
    const started = Date.now();
    const e = await environment(256);
    expect(Date.now() - started).toBeLessThan(5_000);
    const r = await e.invoke(JSON.stringify({ iterations: 10 }));
    expect(r.initDurationMs).toBeGreaterThan(0);
  });

  it('the cgroup made for an environment is removed once its process is gone', async () => {
    if (!cpuLimitMethod().startsWith('cgroup')) return;
    const e = await environment(256);
    const { cgroup } = await run(e, { iterations: 10 });
    const path = /leasehold-sim\/[\w-]+/.exec(cgroup)![0];
    const mount = cpuLimitMethod() === 'cgroup-v1' ? '/sys/fs/cgroup/cpu' : '/sys/fs/cgroup';
    const dir = join(mount, path);
    expect(existsSync(dir)).toBe(true);
    e.kill();
    for (let i = 0; i < 100 && existsSync(dir); i++) await new Promise((r) => setTimeout(r, 20));
    expect(existsSync(dir)).toBe(false);
  });
});

describe('the duty cycle (where no cgroup is writable)', () => {
  it('lets a busy process run about its share, and never thaws it while the environment is frozen', async () => {
    const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    const pid = child.pid!;
    const limit = dutyCycleLimit(vcpuShare(256));
    try {
      limit.attach(pid);
      const before = cpuMsOf(pid);
      await new Promise((r) => setTimeout(r, 1_500));
      const used = cpuMsOf(pid) - before;
      // About 0.145 of 1.5 s (220 ms); unlimited it would be the whole 1,500 ms.
      expect(used).toBeLessThan(600);
      expect(used).toBeGreaterThan(30);
      // Frozen as the environment freezes it: the cycle stops first, then SIGSTOP.
      limit.setRunning(false);
      process.kill(pid, 'SIGSTOP');
      const frozenAt = cpuMsOf(pid);
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 50));
        expect(stateOf(pid)).toBe('T');
      }
      expect(cpuMsOf(pid)).toBe(frozenAt);
    } finally {
      limit.release();
      child.kill('SIGKILL');
    }
  });

  it('stops a thawed process after its run, not at the next tick, and still never thaws a frozen one', () => {
    // Fake timers and a recorded process.kill: the order of signals, whatever the machine's load.
    vi.useFakeTimers();
    const signals: { at: number; signal: string }[] = [];
    const kill = vi.spyOn(process, 'kill').mockImplementation((_pid, signal) => {
      signals.push({ at: Date.now(), signal: String(signal) });
      return true;
    });
    const cycle = dutyCycle(vcpuShare(256))!;
    const limit = dutyCycleLimit(vcpuShare(256));
    try {
      limit.attach(4242);
      vi.advanceTimersByTime(cycle.runMs + cycle.stopMs + 1); // a tick: SIGCONT, then SIGSTOP after the run
      vi.advanceTimersByTime(cycle.runMs);
      expect(signals.map((s) => s.signal)).toEqual(['SIGCONT', 'SIGSTOP']);
      // Thawed by the environment 20 ms into the stop: stopped again after one run, not at the next tick.
      vi.advanceTimersByTime(20);
      limit.setRunning(false);
      limit.setRunning(true);
      const thawed = Date.now();
      signals.length = 0;
      vi.advanceTimersByTime(cycle.runMs);
      expect(signals).toEqual([{ at: thawed + cycle.runMs, signal: 'SIGSTOP' }]);
      // Frozen between invocations: no tick ever thaws it.
      limit.setRunning(false);
      signals.length = 0;
      vi.advanceTimersByTime(10 * (cycle.runMs + cycle.stopMs));
      expect(signals).toEqual([]);
    } finally {
      limit.release();
      kill.mockRestore();
      vi.useRealTimers();
    }
  });
});
