/**
 * A small builder for DynamoDB update and condition expressions. Attribute names and values always go
 * through placeholders, and conditions are added as named parts so each one can carry the race it closes.
 * Task writes are built from their edge of the state machine (transitions.ts, asUpdate).
 */
/** One named piece of a write condition, rendered against an expression's placeholders. */
export type ConditionPart = (e: Expression) => string;

export class Expression {
  private readonly names: Record<string, string> = {};
  private readonly values: Record<string, unknown> = {};
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];
  private readonly adds: string[] = [];
  private readonly conditions: string[] = [];
  private counter = 0;

  name(attribute: string): string {
    const readable = `#${attribute.replace(/[^A-Za-z0-9_]/g, '_')}`;
    // Names that differ only in the characters replaced (`a.b`, `a-b`) must not share a placeholder.
    let placeholder = readable;
    for (let n = 1; this.names[placeholder] !== undefined && this.names[placeholder] !== attribute; n++)
      placeholder = `${readable}_${n}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(v: unknown): string {
    const placeholder = `:v${this.counter++}`;
    this.values[placeholder] = v;
    return placeholder;
  }

  set(attribute: string, v: unknown): this {
    this.sets.push(`${this.name(attribute)} = ${this.value(v)}`);
    return this;
  }

  /** SET each defined entry, REMOVE each undefined one. */
  assign(fields: Record<string, unknown>): this {
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined) this.remove(k);
      else this.set(k, v);
    }
    return this;
  }

  /** SET target = source, copying an attribute inside DynamoDB without reading it. */
  copy(target: string, source: string): this {
    this.sets.push(`${this.name(target)} = ${this.name(source)}`);
    return this;
  }

  remove(...attributes: string[]): this {
    for (const a of attributes) this.removes.push(this.name(a));
    return this;
  }

  /** ADD: a number to a counter, or strings or numbers to a set (created if absent). */
  add(attribute: string, n: number | Set<string> | Set<number>): this {
    this.adds.push(`${this.name(attribute)} ${this.value(n)}`);
    return this;
  }

  /** Adds a named condition part (see conditions.ts); all parts must hold. */
  require(part: ConditionPart): this {
    this.conditions.push(`(${part(this)})`);
    return this;
  }

  updateExpression(): string | undefined {
    const clauses = [
      this.sets.length ? `SET ${this.sets.join(', ')}` : '',
      this.removes.length ? `REMOVE ${this.removes.join(', ')}` : '',
      this.adds.length ? `ADD ${this.adds.join(', ')}` : '',
    ].filter(Boolean);
    return clauses.length ? clauses.join(' ') : undefined;
  }

  conditionExpression(): string | undefined {
    return this.conditions.length ? this.conditions.join(' AND ') : undefined;
  }

  /** The parameters for an UpdateCommand / PutCommand / QueryCommand. */
  params(): {
    UpdateExpression?: string;
    ConditionExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    const out: ReturnType<Expression['params']> = {};
    const update = this.updateExpression();
    const condition = this.conditionExpression();
    if (update) out.UpdateExpression = update;
    if (condition) out.ConditionExpression = condition;
    if (Object.keys(this.names).length) out.ExpressionAttributeNames = { ...this.names };
    if (Object.keys(this.values).length) out.ExpressionAttributeValues = { ...this.values };
    return out;
  }
}
