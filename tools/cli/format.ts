/** Human-readable output for the CLI: task details, task tables, stats and the watch screen. */
import type { TaskJson } from '../../shared/api/response-schemas.js';
import { addCost, type TaskCost } from '../../shared/store/task-cost.js';
import { TaskStatus } from '../../shared/task-model.js';

/**
 * us-east-1 list prices: DynamoDB on-demand read and write request units, Lambda on ARM per GB-second
 * at the worker's default memory (256 MB). What `leasehold stats` prices a type's tasks at.
 */
const PRICES = {
  readUnit: 0.125 / 1e6,
  writeUnit: 0.625 / 1e6,
  lambdaGbSecond: 0.0000133334,
  lambdaGb: 0.25,
};

const priceOf = (c: TaskCost) =>
  c.readUnits * PRICES.readUnit +
  (c.writeUnits + c.indexWriteUnits) * PRICES.writeUnit +
  (c.handlerMs / 1000) * PRICES.lambdaGb * PRICES.lambdaGbSecond;

/** One line: requests, units and handler time, and the price. */
export function costText(c: TaskCost): string {
  return `${c.requests} requests, ${c.readUnits} read units, ${c.writeUnits} write units + ${c.indexWriteUnits} index writes, handlers ${(c.handlerMs / 1000).toFixed(3)} s: $${priceOf(c).toFixed(8)}`;
}

export function taskDetails(task: TaskJson): string {
  const rows: [string, unknown][] = [
    ['id', task.id],
    ['type', task.type],
    ['status', task.status],
    ['priority', task.priority],
    ['group', task.group],
    [
      'parent',
      task.parentId === undefined ? undefined : `${task.parentId}${task.optional ? ' (optional child)' : ''}`,
    ],
    [
      'children',
      task.children === undefined
        ? undefined
        : `${task.children.total - task.children.pending} of ${task.children.total} ended`,
    ],
    ['attempts', `${task.attempts} of ${task.maxAttempts}`],
    ['created', task.createdAt],
    ['available', task.availableAt],
    ['started', task.startedAt],
    ['finished', task.finishedAt],
    ['lease', task.leaseOwner ? `${task.leaseOwner} until ${task.leaseUntil}` : undefined],
    ['progress', task.progress === undefined ? undefined : `${Math.round(task.progress * 100)}%`],
    ['payload', task.payload === undefined ? undefined : JSON.stringify(task.payload)],
    ['result', task.result === undefined ? undefined : JSON.stringify(task.result)],
    ['error', task.error],
    ['cost', task.cost === undefined ? undefined : costText(task.cost)],
  ];
  return rows
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k.padEnd(10)}${String(v)}`)
    .join('\n');
}

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

export function taskTable(tasks: TaskJson[]): string {
  if (tasks.length === 0) return '(no tasks)';
  return table(
    ['ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'CREATED', 'PROGRESS'],
    tasks.map((t) => [
      t.id,
      t.type,
      t.status,
      `${t.attempts}/${t.maxAttempts}`,
      t.createdAt,
      t.progress === undefined ? '' : `${Math.round(t.progress * 100)}%`,
    ]),
  );
}

export interface Stats {
  byType: Record<string, Record<string, number>>;
  /** What the tasks of each type cost, summed (their `cost`), and its price at on-demand rates. */
  costByType: Record<string, TaskCost & { tasks: number; usd: number }>;
  byStatus: Record<string, number>;
  runningLeases: number;
  oldestQueuedAgeMs: number | undefined;
  total: number;
}

export function computeStats(tasks: TaskJson[], now: number): Stats {
  const byType: Stats['byType'] = {};
  const costByType: Stats['costByType'] = {};
  const byStatus: Stats['byStatus'] = {};
  let oldestDue: number | undefined;
  let runningLeases = 0;
  for (const t of tasks) {
    byType[t.type] ??= {};
    byType[t.type]![t.status] = (byType[t.type]![t.status] ?? 0) + 1;
    byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
    if (t.cost) {
      const sum = addCost(costByType[t.type], t.cost);
      costByType[t.type] = { ...sum, tasks: (costByType[t.type]?.tasks ?? 0) + 1, usd: priceOf(sum) };
    }
    if (t.leaseUntil && Date.parse(t.leaseUntil) > now) runningLeases++;
    const due = Date.parse(t.availableAt);
    if (t.status === 'QUEUED' && due <= now) oldestDue = Math.min(oldestDue ?? due, due);
  }
  return {
    byType,
    costByType,
    byStatus,
    runningLeases,
    oldestQueuedAgeMs: oldestDue === undefined ? undefined : now - oldestDue,
    total: tasks.length,
  };
}

/** Every status, in a task's order of life (a parent waits for its children between runs). */
const STATUSES: readonly TaskStatus[] = [
  TaskStatus.QUEUED,
  TaskStatus.WAITING_CHILDREN,
  TaskStatus.RUNNING,
  TaskStatus.CANCEL_REQUESTED,
  TaskStatus.SUCCESS,
  TaskStatus.FAILED,
  TaskStatus.CANCELLED,
];

export function statsText(stats: Stats): string {
  const types = Object.keys(stats.byType).sort();
  const counts = table(
    ['TYPE', ...STATUSES],
    types.map((type) => [type, ...STATUSES.map((s) => String(stats.byType[type]![s] ?? 0))]),
  );
  const costs = table(
    ['TYPE', 'TASKS', 'REQUESTS', 'READ UNITS', 'WRITE UNITS', 'INDEX WRITES', 'HANDLER S', 'USD'],
    Object.keys(stats.costByType)
      .sort()
      .map((type) => {
        const c = stats.costByType[type]!;
        return [
          type,
          String(c.tasks),
          String(c.requests),
          String(c.readUnits),
          String(c.writeUnits),
          String(c.indexWriteUnits),
          (c.handlerMs / 1000).toFixed(1),
          c.usd.toFixed(6),
        ];
      }),
  );
  return [
    counts,
    '',
    costs,
    `(DynamoDB on demand at $${PRICES.readUnit * 1e6} per million read and $${PRICES.writeUnit * 1e6} per million write units, handler time at ${PRICES.lambdaGb} GB; us-east-1)`,
    '',
    `tasks ${stats.total}, running leases ${stats.runningLeases}, oldest queued ${stats.oldestQueuedAgeMs === undefined ? '-' : `${(stats.oldestQueuedAgeMs / 1000).toFixed(1)} s`}`,
  ].join('\n');
}

export function progressBar(fraction: number | undefined, width = 20): string {
  const f = Math.min(1, Math.max(0, fraction ?? 0));
  const filled = Math.round(f * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(f * 100)).padStart(3)}%`;
}

export function watchScreen(tasks: TaskJson[], now: number, url: string): string {
  const stats = computeStats(tasks, now);
  const running = tasks.filter((t) => t.status === 'RUNNING' || t.status === 'CANCEL_REQUESTED');
  const lines = [
    `Leasehold ${url}  ${new Date(now).toISOString()}`,
    STATUSES.map((s) => `${s} ${stats.byStatus[s] ?? 0}`).join('   '),
    '',
    running.length === 0
      ? '(nothing running)'
      : table(
          ['ID', 'TYPE', 'PROGRESS', 'LEASE LEFT', 'HOLDER'],
          running.map((t) => [
            t.id,
            t.type,
            progressBar(t.progress),
            t.leaseUntil ? `${Math.max(0, (Date.parse(t.leaseUntil) - now) / 1000).toFixed(1)} s` : '-',
            t.leaseOwner ?? '',
          ]),
        ),
  ];
  return lines.join('\n');
}
