// Every action asks first, in a native modal <dialog>: focus moves into it and stays there, Escape
// cancels, and focus returns to the button that opened it.
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { html } from './html.mjs';

const ConfirmContext = createContext(async () => false);

/** `await confirm({ title, body, confirmLabel, danger })` -> true when the user confirmed. */
export const useConfirm = () => useContext(ConfirmContext);

export function ConfirmProvider({ children }) {
  const [request, setRequest] = useState(undefined);
  const dialog = useRef(undefined);
  const confirm = useCallback(
    (options) =>
      new Promise((resolve) => {
        setRequest({ ...options, resolve, opener: document.activeElement });
      }),
    [],
  );
  /** The request the dialog shows now (set as it opens, cleared as it is answered). */
  const shown = useRef(undefined);
  useEffect(() => {
    if (request && !dialog.current.open) {
      shown.current = request;
      dialog.current.showModal();
    }
  }, [request]);
  // Answers the request shown and closes the dialog at once, not on its 'close' event: that event
  // comes later, and a key press can be handled before it (Enter on the action again, right after
  // Escape): it then answered and dropped the new request, whose dialog never opened.
  const finish = (answer) => {
    const closing = shown.current;
    if (!closing) return;
    shown.current = undefined;
    closing.resolve(answer);
    if (dialog.current.open) dialog.current.close();
    closing.opener?.focus?.();
    // A newer request waits to be shown: keep it.
    setRequest((current) => (current === closing ? undefined : current));
  };
  // Closed another way: declined. A 'close' event that arrives while the dialog is open again is a
  // late one from the showing before, already answered: ignored.
  const onClose = () => {
    if (!dialog.current.open) finish(false);
  };
  const onCancel = (event) => {
    // Escape: answered here, synchronously (the browser would close it and fire 'close' later).
    event.preventDefault();
    finish(false);
  };
  return html`<${ConfirmContext.Provider} value=${confirm}>
    ${children}
    <dialog
      ref=${dialog}
      class="confirm"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
      onCancel=${onCancel}
      onClose=${onClose}
    >
      ${
        request &&
        html`<h2 id="confirm-title">${request.title}</h2>
          <p id="confirm-body">${request.body}</p>
          <div class="buttons">
            <button
              type="button"
              class=${request.danger ? 'danger' : 'primary'}
              autofocus=${!request.danger}
              onClick=${() => finish(true)}
            >
              ${request.confirmLabel}
            </button>
            <button type="button" autofocus=${!!request.danger} onClick=${() => finish(false)}>
              Keep as is
            </button>
          </div>`
      }
    </dialog>
  <//>`;
}
