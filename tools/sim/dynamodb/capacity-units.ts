/**
 * DynamoDB's capacity arithmetic, for the sim's throttling: an item's size as DynamoDB counts it, and
 * the read and write units a request consumes (1 WCU per started KB written, 1 RCU per started 4 KB
 * read strongly consistent, half that eventually consistent; a transaction costs twice).
 */

/** A DynamoDB item on the wire: attribute name to AttributeValue. */
export type Item = Record<string, AttributeValue>;
export type AttributeValue = Record<string, unknown>;

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/** A Number's size: about one byte per two significant digits, plus one (the documented rule). */
const numberSize = (n: string) => Math.ceil(n.replace(/^-|\.|e.*$/gi, '').replace(/^0+/, '').length / 2) + 1;

const binarySize = (b: string) => Buffer.from(b, 'base64').length;

function valueSize(value: AttributeValue): number {
  const [type, v] = Object.entries(value)[0] ?? ['NULL', true];
  switch (type) {
    case 'S':
      return utf8(String(v));
    case 'N':
      return numberSize(String(v));
    case 'B':
      return binarySize(String(v));
    case 'SS':
      return (v as string[]).reduce((n, s) => n + utf8(s), 0);
    case 'NS':
      return (v as string[]).reduce((n, s) => n + numberSize(s), 0);
    case 'BS':
      return (v as string[]).reduce((n, s) => n + binarySize(s), 0);
    case 'L':
      return 3 + (v as AttributeValue[]).reduce((n, e) => n + 1 + valueSize(e), 0);
    case 'M':
      return 3 + Object.entries(v as Item).reduce((n, [k, e]) => n + 1 + utf8(k) + valueSize(e), 0);
    default: // BOOL, NULL
      return 1;
  }
}

/** An item's size in bytes: its attribute names plus their values. */
export function itemSize(item: Item | undefined): number {
  if (!item) return 0;
  return Object.entries(item).reduce((n, [name, value]) => n + utf8(name) + valueSize(value), 0);
}

/** Write units for writing (or deleting) an item of this many bytes: one per started KB, at least one. */
export const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

/** Read units for reading this many bytes: one per started 4 KB (at least one), half that eventually consistent. */
export const readUnits = (bytes: number, consistent: boolean) =>
  Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);
