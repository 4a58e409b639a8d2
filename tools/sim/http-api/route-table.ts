/**
 * An HTTP API's routes as API Gateway selects them: the most specific match wins (exact path and
 * method, then path variables, then greedy `{proxy+}`, then ANY, then `$default`); nothing matched is
 * API Gateway's own 404. Pure.
 */

export interface Route {
  routeKey: string;
  method: string;
  path: string;
  authorization: 'NONE' | 'AWS_IAM' | string;
  integration: { functionArn: string; payloadFormatVersion: string; timeoutMs: number };
}

export interface RouteMatch {
  route: Route;
  pathParameters: Record<string, string>;
}

function segmentsMatch(pattern: string, path: string): Record<string, string> | undefined {
  const p = pattern.split('/').filter(Boolean);
  const s = path.split('/').filter(Boolean);
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const part = p[i]!;
    const greedy = /^\{(\w+)\+\}$/.exec(part);
    if (greedy) {
      if (i >= s.length) return undefined;
      params[greedy[1]!] = s.slice(i).map(decodeURIComponent).join('/');
      return params;
    }
    if (i >= s.length) return undefined;
    const variable = /^\{(\w+)\}$/.exec(part);
    if (variable) params[variable[1]!] = decodeURIComponent(s[i]!);
    else if (part !== s[i]) return undefined;
  }
  return p.length === s.length ? params : undefined;
}

/** Lower is more specific: literal segments beat variables, variables beat greedy ones, a method beats ANY. */
function specificity(route: Route): number[] {
  const parts = route.path.split('/').filter(Boolean);
  return [
    route.routeKey === '$default' ? 1 : 0,
    parts.some((p) => p.endsWith('+}')) ? 1 : 0,
    -parts.filter((p) => !p.startsWith('{')).length,
    route.method === 'ANY' ? 1 : 0,
  ];
}

export function selectRoute(routes: Route[], method: string, path: string): RouteMatch | undefined {
  const candidates: RouteMatch[] = [];
  for (const route of routes) {
    if (route.routeKey === '$default') {
      candidates.push({ route, pathParameters: {} });
      continue;
    }
    if (route.method !== 'ANY' && route.method !== method) continue;
    const params = segmentsMatch(route.path, path);
    if (params) candidates.push({ route, pathParameters: params });
  }
  candidates.sort((a, b) => {
    const x = specificity(a.route);
    const y = specificity(b.route);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return 0;
  });
  return candidates[0];
}
