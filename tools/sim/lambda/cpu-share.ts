/**
 * How much CPU a Lambda execution environment gets, as pure rules: Lambda allocates CPU in proportion
 * to memory, one vCPU at 1,769 MB (so 256 MB is about 0.145 of one, 128 MB 0.072), up to six vCPUs at
 * 10,240 MB (Lambda developer guide, "Configuring function memory"). The sim applies the share as a
 * CFS quota (cgroups) or, where it may not, as a duty cycle of SIGCONT/SIGSTOP.
 */

/** The memory that buys one full vCPU. */
export const MB_PER_VCPU = 1769;

/**
 * The CFS period the sim sets: the quota is a part of each 20 ms. Shorter than the kernel's default
 * 100 ms so that a process that spent its quota waits at most 17 ms (at 256 MB), not 86 ms: the same
 * average share with less stall, e.g. between a response and the runtime's next request.
 */
export const CFS_PERIOD_US = 20_000;

/** The fraction of one CPU (can exceed 1) a function of this memory gets. */
export function vcpuShare(memoryMb: number): number {
  return memoryMb / MB_PER_VCPU;
}

/** The CFS quota for a share: at least the kernel's minimum of 1 ms per period. */
export function cfsQuotaUs(share: number, periodUs = CFS_PERIOD_US): number {
  return Math.max(1_000, Math.round(share * periodUs));
}

/**
 * The duty cycle that approximates a share below one CPU: run `runMs`, stop `stopMs`, every period.
 * None at a share of one CPU or more (stopping a process cannot give it more than it takes).
 * An approximation: the process is stopped on the wall clock whether or not it used its time.
 */
export function dutyCycle(share: number, periodMs = 100): { runMs: number; stopMs: number } | undefined {
  if (share >= 1) return undefined;
  const runMs = Math.max(1, Math.round(share * periodMs));
  return { runMs, stopMs: periodMs - runMs };
}
