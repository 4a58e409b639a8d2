/** dynalite (an embedded DynamoDB) in this process: in memory, or on disk under a data directory. */
import type { AddressInfo } from 'node:net';
import { isMissingPackage, toolPackageMissing } from '../tool-packages.js';

export interface DynaliteServer {
  endpoint: string;
  close(): Promise<void>;
}

export async function startDynalite(
  options: {
    path?: string;
    port?: number;
    host?: string;
    /** How long a table stays CREATING, DELETING or UPDATING (tests of code that must wait for it). */
    tableStatusMs?: number;
  } = {},
): Promise<DynaliteServer> {
  // 0 by default: a table turns ACTIVE (or gone) on the next timer after CreateTable (DeleteTable)
  // answers, not at once, so callers still wait for it (ensureTable, untilTableStatus); dynalite's
  // default 500 ms, polled by SDK waiters, costs ~20 s per table.
  const statusMs = options.tableStatusMs ?? 0;
  const { default: dynalite } = await import('dynalite').catch((error: unknown) => {
    throw isMissingPackage(error, 'dynalite')
      ? toolPackageMissing('dynalite', 'Running DynamoDB locally (leasehold serve, dynamodb, sim)')
      : error;
  });
  const server = dynalite({
    createTableMs: statusMs,
    deleteTableMs: statusMs,
    updateTableMs: statusMs,
    ...(options.path ? { path: options.path } : {}),
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://${host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
