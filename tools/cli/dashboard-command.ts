/**
 * `leasehold dashboard --url <API> [--port N] [--region R]`: the web dashboard for an API the browser
 * cannot call itself (the deployed API takes SigV4-signed calls only, and has no CORS). The page is
 * served on 127.0.0.1; its calls are forwarded to the API signed as the CLI signs (cli-client.ts): your
 * AWS credentials for an execute-api URL (or with --region), a sim caller's keys for the sim's URL, and
 * nothing for the local stack (which serves the dashboard itself at its own `/`).
 */
import * as z from 'zod';
import { sigv4Signer } from '../../shared/client/sigv4.js';
import { startDashboardProxy } from '../dashboard/dashboard-proxy.js';
import { apiAccess } from './cli-client.js';
import { UsageError } from './usage-error.js';

/** Beside the local stack's 3000. */
export const DEFAULT_DASHBOARD_PORT = 3001;

const dashboardFlags = z.object({
  url: z
    .string({
      error:
        '--url is required: the API to open, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com (the local stack serves its dashboard itself, at http://127.0.0.1:3000/)',
    })
    .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), {
      error: (issue) =>
        `--url must be an http(s) URL such as https://abc123.execute-api.eu-west-1.amazonaws.com (got ${String(issue.input)})`,
    }),
  port: z
    .string()
    .regex(/^\d{1,5}$/, '--port must be a whole number from 0 to 65535 (0 picks a free port)')
    .transform(Number)
    .refine((p) => p <= 65_535, '--port must be a whole number from 0 to 65535 (0 picks a free port)')
    .optional(),
  region: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, '--region must be an AWS region such as eu-west-1')
    .optional(),
  owner: z.string().optional(),
  as: z.string().optional(),
});

/** As parseArgs gives them: any may be missing (a missing --url is reported like a bad one). */
export type DashboardFlags = Partial<z.input<typeof dashboardFlags>>;

/** Serves the dashboard until `stop` aborts; prints where. */
export async function runDashboard(
  rawFlags: DashboardFlags,
  env: Record<string, string | undefined>,
  print: (line: string) => void,
  stop: AbortSignal,
): Promise<number> {
  const parsed = dashboardFlags.safeParse(rawFlags);
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => i.message).join('\n'));
  const flags = parsed.data;
  const target = new URL(flags.url);
  const access = apiAccess(flags.url, flags, env);
  const port = flags.port ?? DEFAULT_DASHBOARD_PORT;
  let proxy;
  try {
    proxy = await startDashboardProxy({
      target,
      signer: access.region ? sigv4Signer(access.region, access.credentials) : undefined,
      owner: access.owner,
      port,
      apiLabel: target.href,
    });
  } catch (error) {
    throw listenRefusal(error, port) ?? error;
  }
  print(`Leasehold dashboard: open ${proxy.signInUrl}`);
  print(`  API      ${target.href}, ${signingText(access, flags.as)}`);
  print(
    '  the link signs in the browser that opens it first, once; other users, processes and web pages get nothing',
  );
  print('Ctrl-C stops it.');
  if (!stop.aborted) await new Promise((resolve) => stop.addEventListener('abort', resolve, { once: true }));
  await proxy.close();
  return 0;
}

/** A port the proxy cannot listen on, as what to pass instead; undefined for any other failure. */
export function listenRefusal(error: unknown, port: number): UsageError | undefined {
  const code = (error as { code?: string } | undefined)?.code;
  if (code === 'EADDRINUSE')
    return new UsageError(`port ${port} is in use: pass --port N (0 picks a free port)`);
  // Ports below 1024 need root (or CAP_NET_BIND_SERVICE) on Linux and macOS: a setup problem, not a bug.
  if (code === 'EACCES')
    return new UsageError(
      `port ${port} needs privileges this user does not have: pass --port N above 1023, or 0 (a free port)`,
    );
  return undefined;
}

function signingText(access: ReturnType<typeof apiAccess>, as: string | undefined): string {
  if (access.local) return `unsigned, as the local stack's caller "${access.owner ?? 'local'}"`;
  if (access.credentials) return `signed (SigV4, ${access.region}) as the sim's caller "${as ?? 'admin'}"`;
  return `signed (SigV4, ${access.region}) with your AWS credentials`;
}
