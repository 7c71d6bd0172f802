/**
 * Small random changes to YAML text for the readers' differential tests (`fast-yaml.test.ts`,
 * `record-set-text.test.ts`): each generated from a seeded generator (`prng.ts`), so a failing case
 * reproduces from its seed.
 */

/** What a mutation puts in: YAML's indicators, spaces and line breaks, quotes and brackets. */
export const YAML_INSERTS: readonly string[] = [
  '\t',
  '&',
  '*',
  '!',
  '|',
  '>',
  '?',
  ':',
  '#',
  '-',
  ' ',
  '  ',
  '\n',
  '"',
  "'",
  '[',
  ']',
  '{',
  '}',
  ',',
];

/** What it puts in one time in five: directives, control characters, a BOM, markers, odd scalars. */
export const YAML_INSERTS_RARE: readonly string[] = [
  '%',
  '\r',
  '\0',
  '\ufeff',
  'é',
  '\ud800',
  '...',
  '---',
  '\\',
  '@',
  '`',
  '~',
  '0',
];

/** One of `list`, drawn with `rng`. */
export function pick<T>(rng: () => number, list: readonly T[]): T {
  return list[Math.floor(rng() * list.length)]!;
}

export interface YamlMutations {
  /** What may be put in at a random place; `rare` instead one time in five. */
  inserts: readonly string[];
  rare: readonly string[];
  /** Also take a line out, and half the time turn every line break into CRLF instead of cutting the text. */
  more?: boolean;
}

/**
 * One to three small changes to `text`: a character put in or taken out, a line repeated (a repeated
 * key, mostly), indented, unindented or swapped with another, the text cut short; with `more`, a
 * line taken out and line breaks made CRLF too.
 */
export function mutateYaml(
  rng: () => number,
  text: string,
  { inserts, rare, more = false }: YamlMutations,
): string {
  let t = text;
  const changes = 1 + Math.floor(rng() * 3);
  for (let c = 0; c < changes; c++) {
    const at = Math.floor(rng() * (t.length + 1));
    const lines = t.split('\n');
    const line = Math.floor(rng() * lines.length);
    const kind = Math.floor(rng() * (more ? 8 : 7));
    if (kind === 0) t = t.slice(0, at) + pick(rng, rng() < 0.8 ? inserts : rare) + t.slice(at);
    else if (kind === 1) t = t.slice(0, at) + t.slice(at + 1);
    else if (kind === 2) {
      lines.splice(line, 0, lines[line] ?? '');
      t = lines.join('\n');
    } else if (kind === 3) {
      lines[line] = ' '.repeat(1 + Math.floor(rng() * 3)) + (lines[line] ?? '');
      t = lines.join('\n');
    } else if (kind === 4) {
      lines[line] = (lines[line] ?? '').replace(/^ {1,3}/, '');
      t = lines.join('\n');
    } else if (kind === 5) {
      const other = Math.floor(rng() * lines.length);
      [lines[line], lines[other]] = [lines[other]!, lines[line]!];
      t = lines.join('\n');
    } else if (kind === 6 && more) {
      lines.splice(line, 1);
      t = lines.join('\n');
    } else t = more && rng() < 0.5 ? t.replaceAll('\n', '\r\n') : t.slice(0, at);
  }
  return t;
}
