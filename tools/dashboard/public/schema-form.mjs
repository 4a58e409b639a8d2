// A task type's payload schema (JSON Schema 2020-12, from the OpenAPI document's
// x-leasehold-task-types) as form fields: an object's properties become labelled inputs by JSON type;
// anything else is written as JSON. The page checks nothing itself: the API checks the payload and its
// problem names each bad field, which the form shows beside the field.

/** Fields for an object schema with properties; undefined when the whole payload is written as JSON. */
export function fieldsOf(schema) {
  if (!schema || typeof schema !== 'object' || schema.type !== 'object' || !schema.properties)
    return undefined;
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    required: required.has(name),
    description: property.description,
    default: property.default,
    ...kindOf(property),
  }));
}

function kindOf(property) {
  if (Array.isArray(property.enum) && property.enum.every((v) => typeof v === 'string'))
    return { kind: 'enum', options: property.enum };
  const types = Array.isArray(property.type) ? property.type.filter((t) => t !== 'null') : [property.type];
  const [type] = types.length === 1 ? types : [undefined];
  if (type === 'string') return { kind: 'string' };
  if (type === 'integer' || type === 'number')
    return {
      kind: type,
      min: property.minimum ?? property.exclusiveMinimum,
      max: property.maximum ?? property.exclusiveMaximum,
    };
  if (type === 'boolean') return { kind: 'boolean' };
  return { kind: 'json' };
}

/** The inputs' first values: each field's default, as its input holds it. */
export function initialValues(fields) {
  const values = {};
  for (const f of fields ?? []) {
    if (f.kind === 'boolean') values[f.name] = f.default === true;
    else if (f.default === undefined) values[f.name] = '';
    else values[f.name] = f.kind === 'json' ? JSON.stringify(f.default) : String(f.default);
  }
  return values;
}

/**
 * The payload the inputs hold: empty inputs are left out, numbers and JSON are parsed. Text that is not
 * JSON or a number is sent as the text it is, for the API to refuse with its own message.
 */
export function payloadOf(fields, values) {
  const payload = {};
  for (const f of fields) {
    const value = values[f.name];
    if (f.kind === 'boolean') {
      payload[f.name] = value === true;
      continue;
    }
    if (value === '' || value === undefined) continue;
    if (f.kind === 'integer' || f.kind === 'number')
      payload[f.name] = Number.isFinite(Number(value)) ? Number(value) : value;
    else if (f.kind === 'json') payload[f.name] = parseJsonOr(value);
    else payload[f.name] = value;
  }
  return payload;
}

export function parseJsonOr(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The field names of the API's problem (`payload.ms`, `priority`) for the form's inputs (`ms`, `priority`). */
export function fieldErrors(problem) {
  const byField = {};
  for (const e of problem?.errors ?? [])
    byField[e.field] = byField[e.field] ? `${byField[e.field]}; ${e.message}` : e.message;
  return byField;
}
