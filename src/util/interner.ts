/**
 * One copy of each repeated string: `get` returns the first string equal to its argument that it
 * saw. Objects received from another thread or parsed from text carry their own copy of every string
 * (a namespace, a kind, an API version per object); interned, equal strings share one. Holds at most
 * `limit` strings; past that it starts again (later equal strings are then shared from the new set).
 */
export class Interner {
  private readonly limit: number;
  private strings = new Map<string, string>();

  constructor(limit = 65_536) {
    this.limit = limit;
  }

  get(s: string): string;
  get(s: string | undefined): string | undefined;
  get(s: string | undefined): string | undefined {
    if (s === undefined) return s;
    const held = this.strings.get(s);
    if (held !== undefined) return held;
    if (this.strings.size >= this.limit) this.strings = new Map();
    this.strings.set(s, s);
    return s;
  }
}
