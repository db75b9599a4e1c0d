/**
 * Reads a Kubernetes list response (`{"kind":…,"metadata":{…},"items":[{…},{…}]}`) as it arrives:
 * each item is parsed on its own and handed over as soon as its closing brace is in, so neither the
 * whole body nor the whole parsed page is ever in memory, and each full object dies young (the
 * caller keeps a slim copy). Everything outside `items` is collected and parsed at the end.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

export class ListStreamParser<T> {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** The part read so far of a string at depth 1 (a top-level key or value); undefined elsewhere. */
  private key: string | undefined;
  /** The last string read at depth 1: the key of an array that opens next. */
  private lastKey = '';
  private inItems = false;
  private itemParts: Buffer[] = [];
  private readonly outside: Buffer[] = [];
  private count = 0;

  constructor(private readonly onItem: (item: unknown) => T) {}

  get items(): number {
    return this.count;
  }

  write(chunk: Buffer): void {
    // State in locals for the byte loop; written back at the end.
    let { depth, inString, escaped, inItems } = this;
    let itemStart = this.itemParts.length > 0 ? 0 : -1;
    let outsideStart = inItems ? -1 : 0;
    let keyStart = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as number;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) {
          inString = false;
          if (this.key !== undefined) {
            this.lastKey = this.key + chunk.toString('latin1', keyStart, i);
            this.key = undefined;
          }
        }
        continue;
      }
      if (c === QUOTE) {
        inString = true;
        // A string at depth 1 is a top-level key or value; the last one before "[" names the array.
        if (depth === 1) {
          this.key = '';
          keyStart = i + 1;
        }
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        depth++;
        if (depth === 2 && c === OPEN_BRACKET && this.lastKey === 'items') {
          this.outside.push(chunk.subarray(outsideStart, i + 1));
          outsideStart = -1;
          inItems = true;
        } else if (inItems && depth === 3) {
          itemStart = i;
        }
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (inItems && depth === 3) {
          this.itemParts.push(chunk.subarray(itemStart, i + 1));
          itemStart = -1;
          this.emit();
        } else if (inItems && depth === 2) {
          inItems = false;
          outsideStart = i;
        }
        depth--;
      }
    }
    if (this.key !== undefined) this.key += chunk.toString('latin1', keyStart);
    if (itemStart >= 0) this.itemParts.push(chunk.subarray(itemStart));
    if (outsideStart >= 0) this.outside.push(chunk.subarray(outsideStart));
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.inItems = inItems;
  }

  private emit(): void {
    const parts = this.itemParts;
    this.itemParts = [];
    const text = (parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)).toString('utf8');
    this.onItem(JSON.parse(text));
    this.count++;
  }

  /** The list without its items (kind, metadata with `continue`), once the body has ended. */
  end<E = unknown>(): E {
    if (this.depth !== 0 || this.inString || this.itemParts.length > 0) {
      throw new SyntaxError('the list response ended in the middle of a JSON value');
    }
    return JSON.parse(Buffer.concat(this.outside).toString('utf8')) as E;
  }
}
