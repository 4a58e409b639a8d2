/**
 * Which requests are the API's: the routes the API handler declares (API_ROUTES), as method + path
 * pattern. `leasehold dashboard` forwards these and nothing else, so the list is never written twice.
 */
import { API_ROUTES } from '../../shared/api/api-handler.js';

interface RouteMatcher {
  method: string;
  pattern: RegExp;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `/tasks/{id}/cancel` -> /^\/tasks\/[^/]+\/cancel$/: a parameter is one non-empty segment. */
function matcherOf(route: { method: string; path: string }): RouteMatcher {
  const source = route.path
    .split(/(\{[^}]+\})/)
    .map((part) => (/^\{[^}]+\}$/.test(part) ? '[^/]+' : escapeRegExp(part)))
    .join('');
  return { method: route.method, pattern: new RegExp(`^${source}$`) };
}

const matchers: RouteMatcher[] = API_ROUTES.map(matcherOf);

/**
 * True when the API has a route for this method and path. `pathname` must come from URL parsing, which has
 * already resolved dot segments (also percent-encoded ones), so a parameter is never `.` or `..`.
 */
export function isApiRoute(method: string, pathname: string): boolean {
  return matchers.some((m) => m.method === method && m.pattern.test(pathname));
}
