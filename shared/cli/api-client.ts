/** A small client of the HTTP API for the CLI: JSON in and out, problem+json turned into ApiError. */
import type { TaskCost } from '../store/task-cost.js';
import { OWNER_HEADER } from '../api/caller.js';
import type { RequestSigner } from './sigv4.js';

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly problem: { detail?: string; errors?: { field: string; message: string }[]; code?: string },
  ) {
    super(problem.detail ?? `HTTP ${status}`);
  }
}

export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

export interface TaskJson {
  id: string;
  type: string;
  status: string;
  priority: number;
  payload?: unknown;
  attempts: number;
  maxAttempts: number;
  createdAt: string;
  updatedAt: string;
  availableAt: string;
  startedAt?: string;
  finishedAt?: string;
  leaseOwner?: string;
  leaseUntil?: string;
  progress?: number;
  result?: unknown;
  error?: string;
  payloadBytes?: number;
  cost?: TaskCost;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly owner: string | undefined,
    /** Signs each request (SigV4) for the deployed API; none for the local stack. */
    private readonly sign?: RequestSigner,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    let res: Response;
    const url = new URL(path, this.baseUrl);
    const text = body === undefined ? undefined : JSON.stringify(body);
    let headers: Record<string, string> = {
      ...(text === undefined ? {} : { 'content-type': 'application/json' }),
      ...(this.owner ? { [OWNER_HEADER]: this.owner } : {}),
    };
    if (this.sign)
      headers = await this.sign(url, { method, headers, ...(text === undefined ? {} : { body: text }) });
    try {
      res = await fetch(url, { method, headers, ...(text === undefined ? {} : { body: text }) });
    } catch (error) {
      throw new UnreachableError(
        `cannot reach the Leasehold API at ${this.baseUrl} (${(error as Error).cause ?? (error as Error).message}); is \`npm start\` running?`,
      );
    }
    const answer = await res.text();
    const parsed = answer ? (JSON.parse(answer) as unknown) : {};
    if (!res.ok) throw new ApiError(res.status, parsed as ApiError['problem']);
    return { status: res.status, body: parsed as T };
  }

  /** Every task of the caller (newest first), following cursors up to `maxPages` pages. */
  async allTasks(filters: Record<string, string> = {}, maxPages = 50): Promise<TaskJson[]> {
    const tasks: TaskJson[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const query = new URLSearchParams({ ...filters, limit: '100', ...(cursor ? { cursor } : {}) });
      const { body } = await this.request<{ tasks: TaskJson[]; nextCursor?: string }>(
        'GET',
        `/tasks?${query}`,
      );
      tasks.push(...body.tasks);
      cursor = body.nextCursor;
      if (!cursor) break;
    }
    return tasks;
  }
}
