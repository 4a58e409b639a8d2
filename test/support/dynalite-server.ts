/** Starts dynalite in this process on an ephemeral port: tests need nothing running beforehand. */
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';

export interface DynaliteServer {
  endpoint: string;
  close(): Promise<void>;
}

export async function startDynalite(): Promise<DynaliteServer> {
  // createTableMs 0: tables are ACTIVE at once (the default 500 ms, polled by SDK waiters, costs ~20 s per table).
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
