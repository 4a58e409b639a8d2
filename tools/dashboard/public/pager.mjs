// Paging through a list the API answers in pages (`nextCursor`): the cursors of the pages before this
// one are kept, so "Previous" goes back without re-reading from the start.
import { useState } from 'preact/hooks';
import { html } from './html.mjs';

/** `key`: the list's filters; a new key starts again at page 1. */
export function usePager(key) {
  const [state, setState] = useState({ key, cursors: [undefined] });
  const current = state.key === key ? state : { key, cursors: [undefined] };
  if (current !== state) setState(current);
  const page = current.cursors.length;
  return {
    cursor: current.cursors[page - 1],
    page,
    next: (cursor) => setState({ key, cursors: [...current.cursors, cursor] }),
    previous: () => setState({ key, cursors: current.cursors.slice(0, -1) }),
  };
}

export function Pager({ pager, nextCursor, label }) {
  if (pager.page === 1 && !nextCursor) return null;
  return html`<nav class="pager" aria-label=${`${label} pages`}>
    <button type="button" disabled=${pager.page === 1} onClick=${pager.previous}>Previous page</button>
    <span>Page ${pager.page}</span>
    <button type="button" disabled=${!nextCursor} onClick=${() => pager.next(nextCursor)}>Next page</button>
  </nav>`;
}
