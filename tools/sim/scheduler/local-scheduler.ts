/**
 * The local EventBridge Scheduler: schedule groups and schedules in memory, the API operations with the
 * checks Scheduler makes (caller's scheduler:<Action> on the schedule ARN, iam:PassRole on the execution
 * role, unknown group / schedule, existing name), and a timer per ENABLED schedule that fires it at its
 * ticks (delivery.ts). The HTTP side is rest-json-server.ts.
 */
import { randomUUID } from 'node:crypto';
import { deliver, type DeliveryContext, type FireRecord } from './delivery.js';
import { SchedulerError } from './errors.js';
import type { SchedulerAuth, SchedulerCaller, SchedulerTargets } from './ports.js';
import { startRestJsonServer, type RestJsonServer } from './rest-json-server.js';
import {
  isoSeconds,
  nextTick,
  validateScheduleRequest,
  type ScheduleRequest,
  type ValidSchedule,
} from './schedule-rules.js';

export type { FireRecord } from './delivery.js';

export interface SchedulerTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface LocalSchedulerOptions {
  region: string;
  accountId: string;
  now?: () => number;
  random?: () => number;
  timers?: SchedulerTimers;
  auth: SchedulerAuth;
  targets: SchedulerTargets;
  /** Schedule groups that exist (include 'default'). */
  groups: string[];
  /** Port listen() binds on 127.0.0.1; 0 (default) takes a free one. */
  port?: number;
}

/** What schedules() shows of one schedule. */
export interface ScheduleView {
  name: string;
  groupName: string;
  arn: string;
  state: 'ENABLED' | 'DISABLED';
  expression: string;
  timezone: string;
  actionAfterCompletion: 'NONE' | 'DELETE';
  targetArn: string;
  creationDate: string;
  lastModificationDate: string;
  /** The next tick (ISO, to the second) once start() ran, if the schedule has one. */
  nextTick?: string;
}

interface Entry {
  schedule: ValidSchedule;
  arn: string;
  creationDate: number;
  lastModificationDate: number;
  /** Rate schedules count from here: Scheduler's create/update time (ms). */
  anchor: number;
  /** The next tick is the first at or after this. */
  cursor: number;
  clientToken?: string;
  timer?: unknown;
  nextTick?: number;
  inFlight: number;
  done: boolean;
}

const defaultTimers: SchedulerTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export class LocalScheduler {
  private readonly entries = new Map<string, Entry>();
  private readonly groups: Set<string>;
  private readonly log: FireRecord[] = [];
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly timers: SchedulerTimers;
  private readonly sleeps = new Set<{ handle: unknown; resolve: (ok: boolean) => void }>();
  private server: RestJsonServer | undefined;
  private started = false;
  private closed = false;

  constructor(private readonly options: LocalSchedulerOptions) {
    this.groups = new Set(options.groups);
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.timers = options.timers ?? defaultTimers;
  }

  /** Starts the REST-JSON endpoint; resolves its URL (AWS_ENDPOINT_URL_SCHEDULER). */
  async listen(): Promise<string> {
    this.server ??= await startRestJsonServer(this, this.options.auth, this.options.port ?? 0);
    return this.server.url;
  }

  /** Starts firing ENABLED schedules (those registered before fire their missed ticks now). */
  start(): void {
    this.started = true;
    for (const e of this.entries.values()) this.arm(e);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const e of this.entries.values()) this.disarm(e);
    for (const s of this.sleeps) {
      this.timers.clearTimeout(s.handle);
      s.resolve(false);
    }
    this.sleeps.clear();
    await this.server?.close();
  }

  /** Registers one of the stack's own AWS::Scheduler::Schedule resources (CreateSchedule input shape, incl. Name and GroupName). */
  putTemplateSchedule(def: unknown): string {
    const schedule = this.validate(fromTemplate(def));
    this.requireGroup(schedule.request.GroupName);
    return this.store(schedule, this.entries.get(key(schedule.request.GroupName, schedule.request.Name)));
  }

  schedules(): ScheduleView[] {
    return [...this.entries.values()].map((e) => {
      const r = e.schedule.request;
      return {
        name: r.Name,
        groupName: r.GroupName,
        arn: e.arn,
        state: r.State,
        expression: r.ScheduleExpression,
        timezone: r.ScheduleExpressionTimezone,
        actionAfterCompletion: r.ActionAfterCompletion,
        targetArn: r.Target.Arn,
        creationDate: new Date(e.creationDate).toISOString(),
        lastModificationDate: new Date(e.lastModificationDate).toISOString(),
        ...(e.nextTick !== undefined ? { nextTick: isoSeconds(e.nextTick) } : {}),
      };
    });
  }

  fires(): FireRecord[] {
    return [...this.log];
  }

  // ---- API operations (caller undefined: the template, no caller checks) ----

  createSchedule(
    caller: SchedulerCaller | undefined,
    name: string,
    body: Record<string, unknown>,
  ): { ScheduleArn: string } {
    const group = groupOf(body);
    this.authorize(caller, 'scheduler:CreateSchedule', this.scheduleArn(group, name));
    const schedule = this.validate({ ...body, Name: name });
    this.passRole(caller, schedule.request);
    this.requireGroup(group);
    const existing = this.entries.get(key(group, name));
    if (existing) {
      // The SDK sends a ClientToken; a retried create with the same token is the same request.
      if (schedule.request.ClientToken && existing.clientToken === schedule.request.ClientToken)
        return { ScheduleArn: existing.arn };
      throw new SchedulerError('ConflictException', `Schedule ${name} already exists.`);
    }
    return { ScheduleArn: this.store(schedule, undefined) };
  }

  updateSchedule(
    caller: SchedulerCaller | undefined,
    name: string,
    body: Record<string, unknown>,
  ): { ScheduleArn: string } {
    const group = groupOf(body);
    this.authorize(caller, 'scheduler:UpdateSchedule', this.scheduleArn(group, name));
    const schedule = this.validate({ ...body, Name: name });
    this.passRole(caller, schedule.request);
    const existing = this.find(group, name);
    return { ScheduleArn: this.store(schedule, existing) };
  }

  deleteSchedule(
    caller: SchedulerCaller | undefined,
    name: string,
    groupName: string | undefined,
  ): Record<string, never> {
    const group = groupName ?? 'default';
    this.authorize(caller, 'scheduler:DeleteSchedule', this.scheduleArn(group, name));
    const e = this.find(group, name);
    this.disarm(e);
    this.entries.delete(key(group, name));
    return {};
  }

  getSchedule(
    caller: SchedulerCaller | undefined,
    name: string,
    groupName: string | undefined,
  ): Record<string, unknown> {
    const group = groupName ?? 'default';
    this.authorize(caller, 'scheduler:GetSchedule', this.scheduleArn(group, name));
    const e = this.find(group, name);
    const { ClientToken: _token, ...request } = e.schedule.request;
    return {
      ...request,
      Arn: e.arn,
      CreationDate: e.creationDate / 1000,
      LastModificationDate: e.lastModificationDate / 1000,
    };
  }

  listSchedules(caller: SchedulerCaller | undefined, query: URLSearchParams): Record<string, unknown> {
    this.authorize(caller, 'scheduler:ListSchedules', '*');
    const group = query.get('ScheduleGroup');
    if (group !== null) this.requireGroup(group);
    const prefix = query.get('NamePrefix') ?? '';
    const state = query.get('State');
    const all = [...this.entries.values()]
      .filter(
        (e) =>
          (group === null || e.schedule.request.GroupName === group) &&
          e.schedule.request.Name.startsWith(prefix) &&
          (state === null || e.schedule.request.State === state),
      )
      .sort((a, b) => a.arn.localeCompare(b.arn));
    const offset = Number(query.get('NextToken') ?? 0);
    const size = Number(query.get('MaxResults') ?? 100);
    const page = all.slice(offset, offset + size).map((e) => ({
      Arn: e.arn,
      Name: e.schedule.request.Name,
      GroupName: e.schedule.request.GroupName,
      State: e.schedule.request.State,
      CreationDate: e.creationDate / 1000,
      LastModificationDate: e.lastModificationDate / 1000,
      Target: { Arn: e.schedule.request.Target.Arn },
    }));
    return { Schedules: page, ...(offset + size < all.length ? { NextToken: String(offset + size) } : {}) };
  }

  // ---- checks ----

  private validate(input: unknown): ValidSchedule {
    const verdict = validateScheduleRequest(input, this.now);
    if (!verdict.ok) throw new SchedulerError('ValidationException', verdict.message);
    return verdict.schedule;
  }

  private authorize(
    caller: SchedulerCaller | undefined,
    action: string,
    resource: string,
    context?: Record<string, string>,
  ): void {
    if (caller && !this.options.auth.isAllowed(caller.principalArn, action, resource, context)) {
      throw new SchedulerError(
        'AccessDeniedException',
        `User: ${caller.principalArn} is not authorized to perform: ${action} on resource: ${resource}`,
      );
    }
  }

  private passRole(caller: SchedulerCaller | undefined, request: ScheduleRequest): void {
    this.authorize(caller, 'iam:PassRole', request.Target.RoleArn, {
      'iam:PassedToService': 'scheduler.amazonaws.com',
    });
  }

  private requireGroup(group: string): void {
    if (!this.groups.has(group))
      throw new SchedulerError('ResourceNotFoundException', `Schedule group ${group} does not exist.`);
  }

  private find(group: string, name: string): Entry {
    this.requireGroup(group);
    const e = this.entries.get(key(group, name));
    if (!e) throw new SchedulerError('ResourceNotFoundException', `Schedule ${name} does not exist.`);
    return e;
  }

  private scheduleArn(group: string, name: string): string {
    return `arn:aws:scheduler:${this.options.region}:${this.options.accountId}:schedule/${group}/${name}`;
  }

  private groupArn(group: string): string {
    return `arn:aws:scheduler:${this.options.region}:${this.options.accountId}:schedule-group/${group}`;
  }

  // ---- firing ----

  /** Creates or replaces; a replaced schedule's rate rhythm restarts at this update, as Scheduler's does. */
  private store(schedule: ValidSchedule, previous: Entry | undefined): string {
    const t = this.now();
    const { GroupName: group, Name: name, ClientToken: clientToken } = schedule.request;
    if (previous) this.disarm(previous);
    const e: Entry = {
      schedule,
      arn: this.scheduleArn(group, name),
      creationDate: previous?.creationDate ?? t,
      lastModificationDate: t,
      anchor: Math.floor(t / 1000) * 1000,
      cursor: t,
      inFlight: 0,
      done: false,
      ...(clientToken ? { clientToken } : {}),
    };
    this.entries.set(key(group, name), e);
    this.arm(e);
    return e.arn;
  }

  private disarm(e: Entry): void {
    if (e.timer !== undefined) this.timers.clearTimeout(e.timer);
    e.timer = undefined;
    e.nextTick = undefined;
  }

  private arm(e: Entry): void {
    this.disarm(e);
    const r = e.schedule.request;
    if (!this.started || this.closed || r.State !== 'ENABLED') return;
    const tick = nextTick(e.schedule, e.anchor, e.cursor);
    if (tick === undefined) return this.complete(e);
    e.nextTick = tick;
    // FLEXIBLE: Scheduler invokes at some moment within the window after the tick.
    const window =
      r.FlexibleTimeWindow.Mode === 'FLEXIBLE'
        ? (r.FlexibleTimeWindow.MaximumWindowInMinutes ?? 0) * 60_000
        : 0;
    const fireAt = tick + Math.floor(this.random() * window);
    e.timer = this.timers.setTimeout(() => this.fire(e, tick), Math.max(0, fireAt - this.now()));
  }

  private fire(e: Entry, tick: number): void {
    e.timer = undefined;
    const r = e.schedule.request;
    if (this.closed || this.entries.get(key(r.GroupName, r.Name)) !== e) return;
    e.cursor = tick + 1000;
    e.inFlight += 1;
    const execution = {
      name: r.Name,
      group: r.GroupName,
      scheduleArn: e.arn,
      groupArn: this.groupArn(r.GroupName),
      target: r.Target,
      tick,
      executionId: randomUUID(),
    };
    void deliver(this.deliveryContext(), execution).finally(() => {
      e.inFlight -= 1;
      if (e.done) this.complete(e);
    });
    this.arm(e);
  }

  /** No ticks left: with ActionAfterCompletion DELETE the schedule goes once its last execution settled. */
  private complete(e: Entry): void {
    e.done = true;
    const r = e.schedule.request;
    if (
      r.ActionAfterCompletion === 'DELETE' &&
      e.inFlight === 0 &&
      this.entries.get(key(r.GroupName, r.Name)) === e
    )
      this.entries.delete(key(r.GroupName, r.Name));
  }

  private deliveryContext(): DeliveryContext {
    return {
      accountId: this.options.accountId,
      auth: this.options.auth,
      targets: this.options.targets,
      now: this.now,
      random: this.random,
      log: (record) => this.log.push(record),
      sleep: (ms) =>
        new Promise<boolean>((resolve) => {
          if (this.closed) return resolve(false);
          const s = {
            handle: undefined as unknown,
            resolve,
          };
          s.handle = this.timers.setTimeout(() => {
            this.sleeps.delete(s);
            resolve(!this.closed);
          }, ms);
          this.sleeps.add(s);
        }),
    };
  }
}

function key(group: string, name: string): string {
  return `${group}/${name}`;
}

function groupOf(body: Record<string, unknown>): string {
  return typeof body.GroupName === 'string' ? body.GroupName : 'default';
}

/** CloudFormation gives StartDate / EndDate as ISO strings; the API takes epoch seconds. */
function fromTemplate(def: unknown): unknown {
  if (!def || typeof def !== 'object') return def;
  const out: Record<string, unknown> = { ...(def as Record<string, unknown>) };
  for (const field of ['StartDate', 'EndDate']) {
    const v = out[field];
    if (typeof v === 'string' && !Number.isNaN(Date.parse(v))) out[field] = Date.parse(v) / 1000;
  }
  return out;
}
