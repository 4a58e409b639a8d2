/** Entry point of the `leasehold` command (npm start runs `leasehold serve`). */
import { main } from './main.js';

main(process.argv.slice(2), process.env).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
