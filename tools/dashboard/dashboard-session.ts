/**
 * Who may use `leasehold dashboard`: the browser that opened the link it printed. The link carries a
 * one-time code; the first request with it trades the code for a session cookie (HttpOnly, so the
 * page's scripts cannot read it; SameSite=Strict, so no other site's page makes the browser send it)
 * and the code is spent. Every later request needs the cookie: another local user or process that
 * connects to the port, or reads the printed link after it was used, gets nothing. (Before, the page
 * carried a token that anyone who fetched the page could read.)
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** The query parameter of the printed link. */
export const SIGN_IN_PARAMETER = 'login';

export class DashboardSession {
  private code: string | undefined;
  private session: string | undefined;
  /** Cookies are not kept apart by port: each dashboard's cookie has a name of its own. */
  readonly cookieName: string;

  constructor(
    port: number,
    private readonly secret: () => string = () => randomBytes(32).toString('base64url'),
  ) {
    this.code = secret();
    this.cookieName = `leasehold_dashboard_${port}`;
  }

  /** The printed link's query (`login=<code>`); undefined once spent. */
  get signInQuery(): string | undefined {
    return this.code === undefined ? undefined : `${SIGN_IN_PARAMETER}=${this.code}`;
  }

  /**
   * Trades the one-time code for a session: the Set-Cookie value, or undefined when the code is not
   * this run's or was spent (then nothing changes: a session already given stays valid).
   */
  redeem(code: string): string | undefined {
    if (this.code === undefined || !sameSecret(code, this.code)) return undefined;
    this.code = undefined;
    this.session = this.secret();
    return `${this.cookieName}=${this.session}; HttpOnly; SameSite=Strict; Path=/`;
  }

  /** True when the request's Cookie header carries this run's session. */
  admits(cookieHeader: string | undefined): boolean {
    if (this.session === undefined || !cookieHeader) return false;
    for (const part of cookieHeader.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === this.cookieName)
        return sameSecret(part.slice(eq + 1).trim(), this.session);
    }
    return false;
  }
}

/** Compared in constant time: the answer's timing says nothing of how much of a guess was right. */
function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
