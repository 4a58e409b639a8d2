/** A command line the CLI cannot run: the message says what to fix; the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
