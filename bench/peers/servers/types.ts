/** A server this benchmark started for one peer, or why it could not. */
export interface LocalServer {
  /** How a client connects: redis://… or postgres://… */
  url: string;
  port: number;
  /** What `<binary> --version` said. */
  version: string;
  /** Stops it and removes its data directory. */
  stop(): Promise<void>;
}

export type ServerStart = { available: true; server: LocalServer } | { available: false; reason: string };
