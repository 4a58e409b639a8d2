/**
 * The chaos run's invariants of flows, from the table's record of every status change (the fault
 * proxy's, applied or of unknown outcome) and the final scan: a parent never starts before its last
 * child ends; it is readied once per wait (never two QUEUED writes in a row without a start between);
 * it is never left waiting when its children have all ended.
 */
export interface FlowTask {
  id: string;
  status: string;
  parentId?: string;
}

export interface StatusWrite {
  task: string;
  status: string;
  t: number;
  applied: 'yes' | 'unknown';
}

const TERMINAL = new Set(['SUCCESS', 'FAILED', 'CANCELLED']);

export function checkFlows(
  tasks: FlowTask[],
  statusWrites: StatusWrite[],
): { violations: { invariant: string; task: string; detail: string }[]; parents: number; children: number } {
  const violations: { invariant: string; task: string; detail: string }[] = [];
  const childrenOf = new Map<string, FlowTask[]>();
  for (const t of tasks)
    if (t.parentId !== undefined) childrenOf.set(t.parentId, [...(childrenOf.get(t.parentId) ?? []), t]);
  const writesOf = new Map<string, StatusWrite[]>();
  for (const w of [...statusWrites].sort((a, b) => a.t - b.t))
    writesOf.set(w.task, [...(writesOf.get(w.task) ?? []), w]);
  const finalById = new Map(tasks.map((t) => [t.id, t]));
  let children = 0;
  for (const [parentId, kids] of childrenOf) {
    children += kids.length;
    const writes = writesOf.get(parentId) ?? [];
    // The moment each child ended, as the table applied it: its last terminal write (one may be of unknown outcome).
    const endedAt = kids.map((k) => ({
      id: k.id,
      at: (writesOf.get(k.id) ?? []).filter((w) => TERMINAL.has(w.status)).at(-1)?.t,
    }));
    const firstWait = writes.findIndex((w) => w.status === 'WAITING_CHILDREN');
    // 1. Every claim (RUNNING) after the parent first waited comes after every child's end.
    for (const claim of writes.slice(firstWait + 1).filter((w) => firstWait >= 0 && w.status === 'RUNNING')) {
      const early = endedAt.filter((e) => e.at === undefined || e.at > claim.t);
      if (early.length > 0)
        violations.push({
          invariant: 'a parent never starts before its last child ends',
          task: parentId,
          detail: `claimed at ${claim.t}; children not ended by then: ${early.map((e) => `${e.id.slice(0, 14)}@${e.at ?? 'never'}`).join(', ')}`,
        });
    }
    // 2. Readied once per wait: two applied QUEUED writes in a row (no claim between) readied it twice.
    const applied = writes.filter((w) => w.applied === 'yes');
    for (let i = 1; i < applied.length; i++)
      if (applied[i]!.status === 'QUEUED' && applied[i - 1]!.status === 'QUEUED')
        violations.push({
          invariant: 'a parent is readied once per wait',
          task: parentId,
          detail: `two QUEUED writes in a row at ${applied[i - 1]!.t} and ${applied[i]!.t}`,
        });
    // 3. Never stranded: not waiting at the end when every child has ended.
    const final = finalById.get(parentId);
    if (final?.status === 'WAITING_CHILDREN' && kids.every((k) => TERMINAL.has(k.status)))
      violations.push({
        invariant: 'a parent is never stranded waiting',
        task: parentId,
        detail: `still WAITING_CHILDREN at the end with all ${kids.length} children ended`,
      });
  }
  return { violations, parents: childrenOf.size, children };
}
