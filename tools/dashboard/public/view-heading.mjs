// Each view's <h1>. After moving to another view, focus goes to its heading (so a keyboard or screen
// reader user starts at the new content), and the document's title names the view.
import { useEffect, useRef } from 'preact/hooks';
import { html } from './html.mjs';
import { takeViewChange } from './router.mjs';

export function ViewHeading({ children, title }) {
  const heading = useRef(undefined);
  useEffect(() => {
    document.title = `${title ?? heading.current.textContent} · Leasehold`;
    if (takeViewChange()) heading.current.focus();
  }, [title]);
  return html`<h1 ref=${heading} tabindex="-1">${children}</h1>`;
}
