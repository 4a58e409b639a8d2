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
  useEffect(() => {
    if (request && !dialog.current.open) dialog.current.showModal();
  }, [request]);
  const onClose = () => {
    const answer = dialog.current.returnValue === 'confirm';
    dialog.current.returnValue = '';
    request?.resolve(answer);
    request?.opener?.focus?.();
    setRequest(undefined);
  };
  const close = (value) => dialog.current.close(value);
  return html`<${ConfirmContext.Provider} value=${confirm}>
    ${children}
    <dialog
      ref=${dialog}
      class="confirm"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
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
              onClick=${() => close('confirm')}
            >
              ${request.confirmLabel}
            </button>
            <button type="button" autofocus=${!!request.danger} onClick=${() => close('cancel')}>
              Keep as is
            </button>
          </div>`
      }
    </dialog>
  <//>`;
}
