// Enqueue a task of a registered type, from a form built from the type's payload schema (or written as
// JSON), with priority, delay and attempts. Asks first; on success opens the new task, on a refusal shows
// the API's problem, each field's message beside its input.
import { useMemo, useRef, useState } from 'preact/hooks';
import { html } from './html.mjs';
import { api, ApiProblem } from './api.mjs';
import { useConfirm } from './confirm.mjs';
import { ProblemMessage } from './problem.mjs';
import { hrefFor, navigate } from './router.mjs';
import { fieldErrors, fieldsOf, initialValues, payloadOf } from './schema-form.mjs';
import { ViewHeading } from './view-heading.mjs';

export function EnqueueView({ taskTypes, typesProblem, query }) {
  return html`<${ViewHeading}>Enqueue a task<//>
    ${
      typesProblem &&
      html`<p class="note">
        The task types could not be read from the OpenAPI document (${typesProblem.detail}): write the type
        and its payload as JSON.
      </p>`
    }
    <${EnqueueForm} taskTypes=${taskTypes} initialType=${query.get('type') ?? taskTypes[0]?.type ?? ''} />`;
}

/** The enqueue options besides the payload, by their names in POST /tasks (whole numbers all). */
const OPTION_FIELDS = [
  {
    id: 'priority',
    label: 'Priority',
    hint: '-1000 to 1000; higher runs first; default 0',
    min: -1000,
    max: 1000,
  },
  {
    id: 'delaySeconds',
    label: 'Delay (seconds)',
    hint: 'run no earlier than this many seconds from now',
    min: 0,
  },
  { id: 'maxAttempts', label: 'Attempts at most', min: 1, max: 100 },
];

/** The payload inputs' state for a type: its schema's fields with their defaults, or JSON when it has none. */
function freshPayload(fields) {
  return { values: initialValues(fields), asJson: fields === undefined, text: '{}' };
}

function EnqueueForm({ taskTypes, initialType }) {
  const [typeName, setTypeName] = useState(initialType);
  const taskType = taskTypes.find((t) => t.type === typeName);
  const fields = useMemo(() => fieldsOf(taskType?.payloadSchema), [taskType]);
  const [payloadState, setPayloadState] = useState(() => ({ type: typeName, ...freshPayload(fields) }));
  const [options, setOptions] = useState({ priority: '', delaySeconds: '', maxAttempts: '' });
  const [problem, setProblem] = useState(undefined);
  const [busy, setBusy] = useState(false);
  // Another type starts from its own defaults (set while rendering, so no frame shows the old fields).
  if (payloadState.type !== typeName) {
    setPayloadState({ type: typeName, ...freshPayload(fields) });
    setProblem(undefined);
  }
  const { values, asJson, text: payloadText } = payloadState;
  const setValues = (update) => setPayloadState((s) => ({ ...s, values: update(s.values) }));
  const setPayloadText = (text) => setPayloadState((s) => ({ ...s, text }));
  const setAsJson = (on) => setPayloadState((s) => ({ ...s, asJson: on }));
  // Kept while the form is unchanged, so sending again after a lost answer finds the first task.
  const idempotencyKey = useRef(undefined);
  const confirm = useConfirm();
  const errors = fieldErrors(problem);
  const edited = (update) => (e) => {
    idempotencyKey.current = undefined;
    update(e.currentTarget.type === 'checkbox' ? e.currentTarget.checked : e.currentTarget.value);
  };

  function switchToJson(on) {
    if (on && fields) setPayloadText(JSON.stringify(payloadOf(fields, values), null, 2));
    setAsJson(on);
  }

  async function submit(event) {
    event.preventDefault();
    let payload;
    if (asJson) {
      try {
        payload = payloadText.trim() === '' ? undefined : JSON.parse(payloadText);
      } catch (error) {
        setProblem(
          new ApiProblem(0, {
            detail: `The payload is not JSON (${error.message}): fix it and send again.`,
            errors: [{ field: 'payload', message: 'is not JSON' }],
          }),
        );
        return;
      }
    } else payload = payloadOf(fields, values);
    const numbers = Object.fromEntries(
      Object.entries(options)
        .filter(([, v]) => v !== '')
        .map(([k, v]) => [k, Number(v)]),
    );
    idempotencyKey.current ??= crypto.randomUUID();
    const body = {
      type: typeName,
      ...(payload === undefined ? {} : { payload }),
      ...numbers,
      idempotencyKey: idempotencyKey.current,
    };
    const ok = await confirm({
      title: `Enqueue a ${typeName} task?`,
      body: `Payload ${JSON.stringify(payload ?? null)}${numbers.delaySeconds ? `, due in ${numbers.delaySeconds} s` : ''}.`,
      confirmLabel: 'Enqueue',
    });
    if (!ok) return;
    setBusy(true);
    try {
      const { task } = await api.enqueue(body);
      idempotencyKey.current = undefined;
      navigate(hrefFor('tasks', task.id));
    } catch (failure) {
      setProblem(failure);
    } finally {
      setBusy(false);
    }
  }

  return html`<form
    class="enqueue"
    novalidate
    onSubmit=${submit}
    aria-describedby=${problem ? 'enqueue-problem' : undefined}
  >
    <div class="field">
      <label for="task-type">Task type</label>
      ${
        taskTypes.length > 0
          ? html`<select id="task-type" value=${typeName} onChange=${edited(setTypeName)}>
              ${taskTypes.map((t) => html`<option value=${t.type}>${t.type}</option>`)}
            </select>`
          : html`<input id="task-type" value=${typeName} onInput=${edited(setTypeName)} required />`
      }
      <${FieldError} id="task-type" message=${errors.type} />
    </div>
    <fieldset>
      <legend>Payload</legend>
      ${
        fields &&
        html`<label class="inline"
          ><input
            type="checkbox"
            checked=${asJson}
            onChange=${(e) => switchToJson(e.currentTarget.checked)}
          />
          Write the payload as JSON</label
        >`
      }
      ${
        asJson || !fields
          ? html`<div class="field">
              <label for="payload-json">Payload (JSON)</label>
              <textarea
                id="payload-json"
                rows="6"
                spellcheck="false"
                value=${payloadText}
                onInput=${edited(setPayloadText)}
                aria-invalid=${errors.payload ? 'true' : undefined}
                aria-describedby=${errors.payload ? 'payload-json-error' : undefined}
              ></textarea>
              <${FieldError} id="payload-json" message=${errors.payload} />
            </div>`
          : fields.map(
              (f) =>
                html`<${SchemaField}
                  field=${f}
                  value=${values[f.name]}
                  message=${errors[`payload.${f.name}`]}
                  onChange=${edited((v) => setValues((old) => ({ ...old, [f.name]: v })))}
                />`,
            )
      }
      ${!asJson && fields && errors.payload && html`<${FieldError} id="payload" message=${errors.payload} />`}
    </fieldset>
    <fieldset>
      <legend>Options</legend>
      ${OPTION_FIELDS.map(
        (o) =>
          html`<${NumberField}
            ...${o}
            hint=${o.id === 'maxAttempts' ? `1 to 100; default ${taskType?.maxAttempts ?? 'the deployment’s setting'}` : o.hint}
            value=${options[o.id]}
            message=${errors[o.id]}
            onInput=${edited((v) => setOptions((old) => ({ ...old, [o.id]: v })))}
          />`,
      )}
    </fieldset>
    <div id="enqueue-problem"><${ProblemMessage} problem=${problem} action="Enqueue" /></div>
    <button type="submit" class="primary" disabled=${busy || !typeName}>Enqueue</button>
  </form>`;
}

function SchemaField({ field, value, message, onChange }) {
  const id = `payload-${field.name}`;
  const described =
    [field.description && `${id}-hint`, message && `${id}-error`].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-invalid': message ? 'true' : undefined, 'aria-describedby': described };
  const label = `${field.name}${field.required ? ' (required)' : ''}`;
  let input;
  if (field.kind === 'boolean')
    return html`<div class="field">
      <label class="inline"
        ><input type="checkbox" ...${common} checked=${value} onChange=${onChange} /> ${label}</label
      >
      ${field.description && html`<p class="hint" id=${`${id}-hint`}>${field.description}</p>`}
      <${FieldError} id=${id} message=${message} />
    </div>`;
  if (field.kind === 'enum')
    input = html`<select ...${common} value=${value} onChange=${onChange}>
      ${!field.required && html`<option value="">(none)</option>`}
      ${field.options.map((o) => html`<option value=${o}>${o}</option>`)}
    </select>`;
  else if (field.kind === 'integer' || field.kind === 'number')
    input = html`<input
      type="number"
      inputmode=${field.kind === 'integer' ? 'numeric' : 'decimal'}
      step=${field.kind === 'integer' ? '1' : 'any'}
      min=${field.min}
      max=${field.max}
      ...${common}
      value=${value}
      onInput=${onChange}
    />`;
  else if (field.kind === 'json')
    input = html`<textarea
      rows="3"
      spellcheck="false"
      ...${common}
      value=${value}
      onInput=${onChange}
    ></textarea>`;
  else input = html`<input type="text" ...${common} value=${value} onInput=${onChange} />`;
  const range =
    field.min !== undefined || field.max !== undefined ? ` (${field.min ?? '…'} to ${field.max ?? '…'})` : '';
  return html`<div class="field">
    <label for=${id}>${label}${field.kind === 'json' ? ' (JSON)' : ''}${range}</label>
    ${input} ${field.description && html`<p class="hint" id=${`${id}-hint`}>${field.description}</p>`}
    <${FieldError} id=${id} message=${message} />
  </div>`;
}

function NumberField({ id, label, hint, min, max, value, message, onInput }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <input
      id=${id}
      type="number"
      step="1"
      min=${min}
      max=${max}
      value=${value}
      onInput=${onInput}
      aria-describedby=${[`${id}-hint`, message && `${id}-error`].filter(Boolean).join(' ')}
      aria-invalid=${message ? 'true' : undefined}
    />
    <p class="hint" id=${`${id}-hint`}>${hint}</p>
    <${FieldError} id=${id} message=${message} />
  </div>`;
}

function FieldError({ id, message }) {
  return message ? html`<p class="field-error" id=${`${id}-error`}>${message}</p>` : null;
}
