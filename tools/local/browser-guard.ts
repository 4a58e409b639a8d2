/**
 * What a server on this machine (the local stack, `leasehold dashboard`) refuses so that no web page the
 * developer visits can use it. Pure rules over a request's method and headers:
 * - a Host that is not this server's own name (loopback names or the bound address, with the port):
 *   a DNS-rebinding page reaches the port under its own name, and sends that name as Host;
 * - a state change from another origin: browsers send `Origin` on every cross-origin POST, PUT and
 *   DELETE, and `Sec-Fetch-Site` on every request (curl, the CLI and the SDKs send neither);
 * - a state change whose body type a plain HTML form or a no-cors fetch can send (text/plain, form
 *   encodings): those need no CORS preflight, which these servers never grant.
 */
import type { IncomingHttpHeaders } from 'node:http';

export interface BrowserRefusal {
  status: 403 | 415;
  code: 'HOST_REFUSED' | 'CROSS_SITE_REFUSED' | 'CONTENT_TYPE_REFUSED';
  detail: string;
}

/** Methods that change nothing: only the Host rule applies to them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The body types a cross-site form or no-cors fetch sends without a preflight (the Fetch standard's list). */
const SIMPLE_CONTENT_TYPES = new Set([
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
]);
/** `Sec-Fetch-Site` values of a request the server's own page (or the user typing the URL) made. */
const OWN_FETCH_SITES = new Set(['same-origin', 'none']);
const WILDCARD_ADDRESSES = new Set(['0.0.0.0', '::', '']);

/**
 * The Host values (and Origins, less `http://`) of this server on `port`: the loopback names, and the
 * address it is bound to when that is a specific one. Browsers leave port 80 out, so there the bare
 * names too. `extra`: more Host values the user allows, as sent (e.g. a container's `myhost:8080`).
 */
export function allowedHostsFor(
  port: number,
  bound = '127.0.0.1',
  extra: readonly string[] = [],
): Set<string> {
  const names = ['127.0.0.1', 'localhost', '[::1]'];
  if (!WILDCARD_ADDRESSES.has(bound)) names.push(bound.includes(':') ? `[${bound}]` : bound);
  const hosts = new Set<string>();
  for (const name of names) {
    hosts.add(`${name}:${port}`);
    if (port === 80) hosts.add(name);
  }
  for (const host of extra) hosts.add(host.toLowerCase());
  return hosts;
}

/** Why this request may not be answered, or undefined when it may. */
export function browserRefusal(
  method: string,
  headers: IncomingHttpHeaders,
  allowedHosts: ReadonlySet<string>,
): BrowserRefusal | undefined {
  const host = (headers.host ?? '').toLowerCase();
  if (!allowedHosts.has(host))
    return {
      status: 403,
      code: 'HOST_REFUSED',
      detail: `This server answers only to ${[...allowedHosts].join(' or ')} (the request named "${host}"). Use one of those addresses.`,
    };
  if (SAFE_METHODS.has(method.toUpperCase())) return undefined;
  const origin = headers.origin;
  if (origin !== undefined && !allowedHosts.has(origin.replace(/^http:\/\//i, '').toLowerCase()))
    return {
      status: 403,
      code: 'CROSS_SITE_REFUSED',
      detail: `A ${method} from ${origin} is refused: only this server's own page, the CLI and the clients may change anything.`,
    };
  const site = headers['sec-fetch-site'];
  if (site !== undefined && !OWN_FETCH_SITES.has(String(site).toLowerCase()))
    return {
      status: 403,
      code: 'CROSS_SITE_REFUSED',
      detail: `A ${method} sent from another site (Sec-Fetch-Site: ${site}) is refused: only this server's own page, the CLI and the clients may change anything.`,
    };
  const mediaType = String(headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (SIMPLE_CONTENT_TYPES.has(mediaType))
    return {
      status: 415,
      code: 'CONTENT_TYPE_REFUSED',
      detail: `A ${method} with Content-Type ${mediaType} is refused (a form on any web page can send one); send application/json.`,
    };
  return undefined;
}
