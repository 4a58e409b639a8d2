// Live refresh by short polling: every few seconds, while the tab is visible, one refresh reads the
// overview's data (GET /stats) and the data of the one view that is open, and nothing per task. Not
// server-sent events: the deployed API is API Gateway's HTTP API in front of Lambda, which cannot hold
// a stream open, and polling keeps one code path for the local stack, the sim and AWS.
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';

const DEFAULT_INTERVAL_MS = 5_000;
const MIN_INTERVAL_MS = 250;

/** The polling interval: `?poll=<ms>` in the page's URL (tests use 500), else every 5 s. */
export function pollIntervalMs(search = location.search) {
  const asked = Number(new URLSearchParams(search).get('poll'));
  return Number.isFinite(asked) && asked > 0 ? Math.max(asked, MIN_INTERVAL_MS) : DEFAULT_INTERVAL_MS;
}

/** Where the open view registers what it reads, so each refresh reads it once along with the stats. */
export const RefreshContext = createContext({ register: () => () => {} });

/**
 * Runs refreshes: on a timer while the page is visible, at once when it becomes visible again, and when
 * asked (`refreshNow`). A refresh never overlaps the previous one. `readStats` and each registered
 * loader are called once per refresh.
 */
export function useRefreshLoop(readStats, intervalMs) {
  const loaders = useRef(new Set());
  const running = useRef(undefined);
  const [status, setStatus] = useState({ count: 0, at: undefined });

  const refreshNow = useCallback(() => {
    running.current ??= Promise.allSettled([readStats(), ...[...loaders.current].map((load) => load())]).then(
      () => {
        running.current = undefined;
        setStatus((s) => ({ count: s.count + 1, at: new Date() }));
      },
    );
    return running.current;
  }, [readStats]);

  useEffect(() => {
    let timer;
    const start = () => {
      clearInterval(timer);
      if (document.visibilityState === 'visible') timer = setInterval(refreshNow, intervalMs);
    };
    const onVisibility = () => {
      if (document.visibilityState === 'visible') void refreshNow();
      start();
    };
    void refreshNow();
    start();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [refreshNow, intervalMs]);

  const registry = useRef({
    register: (load) => {
      loaders.current.add(load);
      return () => loaders.current.delete(load);
    },
  }).current;
  return { refreshNow, status, registry };
}

/**
 * What a view shows, read when the view opens (or `deps` change) and again on every refresh. A read that
 * fails keeps the last data and shows the problem beside it; answers to reads made for older `deps` are
 * dropped.
 */
export function useViewData(load, deps) {
  const registry = useContext(RefreshContext);
  const [state, setState] = useState({ data: undefined, problem: undefined, loaded: false });
  const reload = useRef(async () => {});
  useEffect(() => {
    let current = true;
    setState({ data: undefined, problem: undefined, loaded: false });
    const read = async () => {
      try {
        const data = await load();
        if (current) setState({ data, problem: undefined, loaded: true });
      } catch (problem) {
        if (current) setState((s) => ({ ...s, problem, loaded: true }));
      }
    };
    reload.current = read;
    const unregister = registry.register(read);
    void read();
    return () => {
      current = false;
      unregister();
    };
  }, deps);
  return { ...state, reload: () => reload.current() };
}
