// Views are addressed by the URL's fragment (#/tasks/<id>), so the server serves one page at `/` and
// nothing else: no path a view uses has to be known to the server.
import { useEffect, useState } from 'preact/hooks';

/** `#/tasks/abc?status=FAILED` -> { parts: ['tasks', 'abc'], query: URLSearchParams } */
export function parseRoute(hash) {
  const [path, search = ''] = hash.replace(/^#/, '').split('?');
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return { parts, query: new URLSearchParams(search) };
}

let viewChanged = false;

/** True once after the user moved to another view (not on the first load): the new view's heading takes focus. */
export function takeViewChange() {
  const changed = viewChanged;
  viewChanged = false;
  return changed;
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => {
      viewChanged = true;
      setRoute(parseRoute(location.hash));
    };
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** The fragment of a view: hrefFor('tasks', id) -> '#/tasks/<id>'; `query` members left empty are dropped. */
export function hrefFor(...parts) {
  const query = typeof parts.at(-1) === 'object' ? parts.pop() : undefined;
  const search = new URLSearchParams(
    Object.entries(query ?? {}).filter(([, v]) => v !== undefined && v !== ''),
  );
  const tail = search.size ? `?${search}` : '';
  return `#/${parts.map((p) => encodeURIComponent(p)).join('/')}${tail}`;
}

export function navigate(href) {
  location.hash = href;
}
