/** dynalite (an embedded DynamoDB) in this process: in memory, or on disk under a data directory. */
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';

export interface DynaliteServer {
  endpoint: string;
  close(): Promise<void>;
}

export async function startDynalite(
  options: { path?: string; port?: number; host?: string } = {},
): Promise<DynaliteServer> {
  // createTableMs 0: tables are ACTIVE at once (the default 500 ms, polled by SDK waiters, costs ~20 s per table).
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
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
