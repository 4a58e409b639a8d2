/** A small client of the HTTP API for the CLI: JSON in and out, problem+json turned into ApiError. */
import { OWNER_HEADER } from '../local/http-bridge.js';

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
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly owner: string | undefined,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.baseUrl), {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(this.owner ? { [OWNER_HEADER]: this.owner } : {}) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new UnreachableError(`cannot reach the Leasehold API at ${this.baseUrl} (${(error as Error).cause ?? (error as Error).message}); is \`npm start\` running?`);
    }
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as unknown) : {};
    if (!res.ok) throw new ApiError(res.status, parsed as ApiError['problem']);
    return { status: res.status, body: parsed as T };
  }

  /** Every task of the caller (newest first), following cursors up to `maxPages` pages. */
  async allTasks(filters: Record<string, string> = {}, maxPages = 50): Promise<TaskJson[]> {
    const tasks: TaskJson[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const query = new URLSearchParams({ ...filters, limit: '100', ...(cursor ? { cursor } : {}) });
      const { body } = await this.request<{ tasks: TaskJson[]; nextCursor?: string }>('GET', `/tasks?${query}`);
      tasks.push(...body.tasks);
      cursor = body.nextCursor;
      if (!cursor) break;
    }
    return tasks;
  }
}
