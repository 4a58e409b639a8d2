/** Every endpoint the sim serves listens on loopback only, and closes without waiting on keep-alive connections. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listenOnLoopback(
  server: Server,
  port = 0,
): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections would hold the close open.
        server.closeAllConnections();
      }),
  };
}
