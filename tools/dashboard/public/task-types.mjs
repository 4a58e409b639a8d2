// The registered task types, read once when the page opens: the OpenAPI document lists them with their
// payload schemas under `x-leasehold-task-types`, which the enqueue form is built from.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.mjs';

export function useTaskTypes() {
  const [state, setState] = useState({ types: [], problem: undefined });
  useEffect(() => {
    api.openApi().then(
      (doc) => {
        const types = Array.isArray(doc?.['x-leasehold-task-types']) ? doc['x-leasehold-task-types'] : [];
        setState({ types: [...types].sort((a, b) => a.type.localeCompare(b.type)), problem: undefined });
      },
      (problem) => setState({ types: [], problem }),
    );
  }, []);
  return state;
}
