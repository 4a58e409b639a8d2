/**
 * Stops the servers this benchmark started even when it does not get to stop them itself (an error,
 * Ctrl-C): each server registers a synchronous stop, run at process exit.
 */
const stops = new Set<() => void>();
let installed = false;

/** Registers `stop` to run at exit; returns a function that unregisters it (once stopped normally). */
export function stopAtExit(stop: () => void): () => void {
  if (!installed) {
    installed = true;
    process.once('exit', () => {
      for (const s of stops) s();
    });
    // A signal would otherwise end the process without the 'exit' event.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  }
  stops.add(stop);
  return () => stops.delete(stop);
}
