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

/**
 * One frozen `{ name }` per name, for references many objects repeat the same way (record sets'
 * `spec.zoneRef` by name: every record set of a zone names it). Objects parsed from text each carry
 * their own; shared, the record sets of a zone hold one (32 bytes less per record set; docs/benchmarks.md,
 * eighth round). Frozen, so that no holder can change what the others see. Holds at most `limit`;
 * past that it starts again, as `Interner` does.
 */
export class NameRefInterner {
  private readonly limit: number;
  private refs = new Map<string, Readonly<{ name: string }>>();

  constructor(limit = 65_536) {
    this.limit = limit;
  }

  get(name: string): Readonly<{ name: string }> {
    const held = this.refs.get(name);
    if (held !== undefined) return held;
    if (this.refs.size >= this.limit) this.refs = new Map();
    const ref = Object.freeze({ name });
    this.refs.set(name, ref);
    return ref;
  }
}
