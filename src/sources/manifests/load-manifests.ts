import type { Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import jsYaml from 'js-yaml';
import { type Document, isMap, isScalar, LineCounter, parseAllDocuments, visit } from 'yaml';
import { pushAll } from '../../util/push-all.ts';
import { fastLoadAll, type RecordSetReader, TAKEN } from './fast-yaml.ts';

/** One document read from a manifest file, before validation. */
export interface ManifestDocument<T = never> {
  file: string;
  /** 1-based index of the document in its file. */
  document: number;
  /** 1-based line where the document starts. */
  line: number;
  /** The document's value; undefined where `taken` holds what a `RecordSetReader` made of it instead. */
  value: unknown;
  /** What `parseManifestText`'s `RecordSetReader` made of the document's text, where it took it. */
  taken?: T | undefined;
  /** Line of a field path such as `spec.records[1]`, for precise error reports. */
  lineOf(fieldPath: string): number | undefined;
}

export interface ManifestFileError {
  file: string;
  /** Stable code: YAML_INVALID when absent. */
  code?: string;
  document?: number;
  line?: number;
  message: string;
}

export interface ManifestRead<T = never> {
  documents: ManifestDocument<T>[];
  /** Files that could not be read or parsed as YAML, in whole or in part. */
  fileErrors: ManifestFileError[];
}

/** Every `*.yaml`/`*.yml` below `root` (hidden files and folders skipped), in sorted order. */
export async function listManifestFiles(root: string): Promise<string[]> {
  const tree = await listManifestTree(root);
  return tree.files;
}

/** A folder of the tree: the path it was reached by, and where it really is (symbolic links resolved). */
export interface ManifestFolder {
  path: string;
  real: string;
}

export interface ManifestTree {
  /** Manifest files, by the path they were reached by; a file reached twice is listed once. */
  files: string[];
  /** The folders they live in, root included. */
  dirs: ManifestFolder[];
  /** Folders that could not be read and broken links, below the root. */
  errors: ManifestFileError[];
}

/**
 * The manifest files below `root`, sorted, and the folders they live in. Symbolic links are followed,
 * to files and to folders (a ConfigMap volume is made of them: `zone.yaml -> ..data/zone.yaml`,
 * `..data -> ..2026_01_01_...`), each folder at most once, so a link back to a parent is no loop.
 * Hidden entries (`.x`, and so `..data`) are skipped: what a ConfigMap volume shows are the links.
 * Throws when `root` itself cannot be read; below it, problems are returned in `errors`. A `root`
 * that is a file is listed as itself, whatever its name.
 */
export async function listManifestTree(root: string): Promise<ManifestTree> {
  const files: string[] = [];
  const dirs: ManifestFolder[] = [];
  const errors: ManifestFileError[] = [];
  const seenDirs = new Set<string>();
  const seenFiles = new Set<string>();
  const walk = async (dir: string, real: string) => {
    if (seenDirs.has(real)) return; // reached before, through another link (or a loop)
    seenDirs.add(real);
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      if (dir === root) throw e;
      errors.push({
        file: dir,
        code: 'FOLDER_UNREADABLE',
        message: `cannot read the folder: ${(e as Error).message}`,
      });
      return;
    }
    dirs.push({ path: dir, real });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      const manifest = /\.ya?ml$/i.test(entry.name);
      let isDir = entry.isDirectory();
      let isFile = entry.isFile();
      let target = path.join(real, entry.name);
      if (entry.isSymbolicLink()) {
        try {
          target = await realpath(full);
          const info = await stat(target);
          isDir = info.isDirectory();
          isFile = info.isFile();
        } catch (e) {
          if (manifest)
            errors.push({
              file: full,
              code: 'BROKEN_LINK',
              message: `cannot follow the symbolic link: ${(e as Error).message}`,
            });
          continue;
        }
      }
      if (isDir) await walk(full, target);
      else if (isFile && manifest && !seenFiles.has(target)) {
        seenFiles.add(target);
        files.push(full);
      }
    }
  };
  const real = await realpath(root);
  if (!(await stat(real)).isDirectory()) return { files: [root], dirs: [], errors: [] }; // a file named as such
  await walk(root, real);
  return { files, dirs, errors };
}

/** Reads files (or folders, recursively) into YAML documents; empty documents are skipped. */
export async function readManifests(paths: readonly string[]): Promise<ManifestRead> {
  const documents: ManifestDocument[] = [];
  const fileErrors: ManifestFileError[] = [];
  for (const p of paths) {
    let files: string[];
    try {
      if (await isDirectory(p)) {
        const tree = await listManifestTree(p);
        files = tree.files;
        pushAll(fileErrors, tree.errors);
      } else {
        files = [p];
      }
    } catch (e) {
      fileErrors.push({ file: p, message: `cannot read: ${(e as Error).message}` });
      continue;
    }
    for (const file of files) {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (e) {
        fileErrors.push({ file, message: `cannot read: ${(e as Error).message}` });
        continue;
      }
      const parsed = parseManifestText(text, file);
      pushAll(documents, parsed.documents);
      pushAll(fileErrors, parsed.fileErrors);
    }
  }
  return { documents, fileErrors };
}

/**
 * Parses a manifest file. The common case — valid YAML — takes the fast path (`fastLoadAll` for the
 * YAML manifests are made of, else js-yaml, YAML 1.2 core schema, the same scalar resolution as
 * `yaml`'s default), about ten times faster on large folders;
 * positions (document start lines, field lines) are computed only when a problem is reported, from a
 * full `yaml` parse of that one file. A file js-yaml rejects goes through `yaml`, whose errors say
 * where and what.
 */
export function parseManifestText<T = never>(
  text: string,
  file: string,
  reader?: RecordSetReader<T>,
): ManifestRead<T> {
  // Anchors and aliases go through `yaml`, which caps alias expansion (a "billion laughs" file would
  // otherwise cost exponential work); manifests rarely use them.
  if (mayHaveAnchor(text)) return parseManifestTextPrecisely(text, file);
  // The YAML manifests are made of (block and one-line flow collections of one-line scalars) is read
  // by `fastLoadAll`, with js-yaml's results; anything else, and anything js-yaml would refuse, is
  // left to js-yaml.
  const taken: (T | undefined)[] = [];
  let values = fastLoadAll(text, reader, taken);
  if (values === undefined) {
    try {
      const all: unknown[] = [];
      jsYaml.loadAll(text, (doc) => all.push(doc), {
        schema: jsYaml.CORE_SCHEMA,
        filename: file,
        json: false,
      });
      values = all;
    } catch {
      return parseManifestTextPrecisely(text, file);
    }
  }
  const positions = new Positions(text, file);
  const documents: ManifestDocument<T>[] = [];
  let k = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) continue;
    // js-yaml calls back once per document, empty ones included: the same numbering as `yaml`.
    documents.push(
      value === TAKEN
        ? new ReadDocument<T>(file, i + 1, undefined, k++, positions, taken[i])
        : new ReadDocument<T>(file, i + 1, value, k++, positions, undefined),
    );
  }
  return { documents, fileErrors: [] };
}

/** A file's positions, from the precise parse made the first time one is asked for. */
class Positions {
  private readonly text: string;
  private readonly file: string;
  private precise: ManifestDocument[] | undefined;

  constructor(text: string, file: string) {
    this.text = text;
    this.file = file;
  }

  /** The `k`th non-empty document of the precise parse. */
  of(k: number): ManifestDocument | undefined {
    this.precise ??= parseManifestTextPrecisely(this.text, this.file).documents;
    return this.precise[k];
  }
}

/**
 * A document read by the fast path; its line and its fields' lines come from the precise parse, made
 * only when one is asked for. A class (its accessors shared), not an object literal with a getter and
 * a closure of its own per document: a parse thread makes hundreds of thousands of them.
 */
class ReadDocument<T> implements ManifestDocument<T> {
  readonly file: string;
  readonly document: number;
  readonly value: unknown;
  readonly taken: T | undefined;
  /** Its index among the file's non-empty documents. */
  private readonly index: number;
  private readonly positions: Positions;

  constructor(
    file: string,
    document: number,
    value: unknown,
    index: number,
    positions: Positions,
    taken: T | undefined,
  ) {
    this.file = file;
    this.document = document;
    this.value = value;
    this.index = index;
    this.positions = positions;
    this.taken = taken;
  }

  get line(): number {
    return this.positions.of(this.index)?.line ?? 1;
  }

  lineOf(fieldPath: string): number | undefined {
    return this.positions.of(this.index)?.lineOf(fieldPath);
  }
}

/** Before an anchor's `&`: whitespace (line breaks among it) or a flow or block indicator. */
const BEFORE_ANCHOR = /[\s[{,:-]/;
const SPACE = /\s/;

/**
 * Whether the text may hold an anchor: what `/(^|[\s[{,:-])&[^\s]/m` matches (a `&` at the start, or
 * after whitespace or an indicator, and followed by something else than whitespace), found from each
 * `&` instead of trying the pattern at every character: a manifest folder rarely has a `&` at all.
 */
export function mayHaveAnchor(text: string): boolean {
  for (let i = text.indexOf('&'); i >= 0; i = text.indexOf('&', i + 1)) {
    if (i + 1 >= text.length || SPACE.test(text[i + 1]!)) continue;
    if (i === 0 || BEFORE_ANCHOR.test(text[i - 1]!)) return true;
  }
  return false;
}

/**
 * Most characters a file's values may hold once its aliases are resolved (strings and keys, and one
 * for each other node), counted at every place an alias repeats its anchor: `maxAliasCount` counts
 * aliases, not what they repeat, so 100 aliases of one 5 MB string made a 5 MB file 500 M characters
 * of values, more than V8 can make into the one string a parse thread sends. The default size limit
 * of a manifest file; and for a file of `n` characters at most `RESOLVED_PER_CHAR * n +
 * RESOLVED_EXTRA` (`resolvedBudget`), so that a folder of many small files cannot multiply its size a
 * hundredfold either (memory, and the state log that keeps every object).
 */
export const MAX_RESOLVED_CHARS = 16 * 2 ** 20;
export const RESOLVED_PER_CHAR = 4;
export const RESOLVED_EXTRA = 64 * 2 ** 10;

/** What the values of a file of `length` characters may resolve to (see `MAX_RESOLVED_CHARS`). */
export function resolvedBudget(length: number): number {
  return Math.min(MAX_RESOLVED_CHARS, RESOLVED_PER_CHAR * length + RESOLVED_EXTRA);
}

/** The characters of `value` as `MAX_RESOLVED_CHARS` counts them, once past `budget` any count above it. */
function resolvedChars(value: unknown, budget: number): number {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && total <= budget) {
    const v = stack.pop();
    if (typeof v === 'string') total += v.length;
    else {
      total++;
      if (Array.isArray(v)) pushAll(stack, v);
      else if (v !== null && typeof v === 'object')
        for (const [key, x] of Object.entries(v)) {
          total += key.length;
          stack.push(x);
        }
    }
  }
  return total;
}

/** The full parse with `yaml`: every position known, every error located. */
function parseManifestTextPrecisely(text: string, file: string): ManifestRead {
  let resolved = 0;
  const budget = resolvedBudget(text.length);
  const lineCounter = new LineCounter();
  // Duplicate keys are found by `duplicateKey` (one set per mapping): `yaml`'s own check compares each
  // key with every earlier one, quadratic in a mapping's size (15 s for 20,000 keys).
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  const documents: ManifestDocument[] = [];
  const fileErrors: ManifestFileError[] = [];
  if (!Array.isArray(docs)) {
    // An empty stream.
    return { documents, fileErrors };
  }
  docs.forEach((doc, i) => {
    const line = lineCounter.linePos(doc.range[0]).line;
    if (doc.errors.length > 0) {
      for (const error of doc.errors) {
        const at = error.pos ? lineCounter.linePos(error.pos[0]).line : line;
        fileErrors.push({
          file,
          document: i + 1,
          line: at,
          message: `YAML: ${error.message.split('\n')[0]}`,
        });
      }
      return;
    }
    const duplicate = duplicateKey(doc);
    if (duplicate !== undefined) {
      fileErrors.push({
        file,
        document: i + 1,
        line: duplicate === null ? line : lineCounter.linePos(duplicate).line,
        message: 'YAML: Map keys must be unique',
      });
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      // e.g. too many aliases: refuse the document rather than expand it
      fileErrors.push({ file, document: i + 1, line, message: `YAML: ${(e as Error).message}` });
      return;
    }
    if (value === null || value === undefined) return;
    resolved += resolvedChars(value, budget - resolved);
    if (resolved > budget) {
      fileErrors.push({
        file,
        document: i + 1,
        line,
        message: `YAML: its aliases make the file's values more than ${budget} characters long (${RESOLVED_PER_CHAR} times the file's length and ${RESOLVED_EXTRA} more, at most ${MAX_RESOLVED_CHARS}); write the values out, or repeat fewer of them`,
      });
      return;
    }
    documents.push({
      file,
      document: i + 1,
      line,
      value,
      lineOf: (fieldPath) => lineOfPath(doc, lineCounter, fieldPath),
    });
  });
  return { documents, fileErrors };
}

/**
 * Where a mapping of the document repeats a key (YAML 1.2 §3.2.1.1: keys are unique): the offset of the
 * second occurrence (null when it has no position), or undefined when none does. Scalar keys are equal
 * when their values are (as `yaml`'s own check: 1 and "1" differ); other keys are not compared.
 */
function duplicateKey(doc: Document): number | null | undefined {
  let found: number | null | undefined;
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return undefined;
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        if (seen.has(pair.key.value)) {
          found = pair.key.range?.[0] ?? null;
          return visit.BREAK;
        }
        seen.add(pair.key.value);
      }
      return undefined;
    },
  });
  return found;
}

function lineOfPath(doc: Document, lineCounter: LineCounter, fieldPath: string): number | undefined {
  const segments: (string | number)[] = [];
  for (const part of fieldPath.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) return undefined;
    if (m[1]) segments.push(m[1]);
    for (const idx of m[2]!.matchAll(/\[(\d+)\]/g)) segments.push(Number(idx[1]));
  }
  // Walk up the path until a node exists: a missing field is reported at its parent.
  for (let n = segments.length; n >= 0; n--) {
    const node = doc.getIn(segments.slice(0, n), true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return lineCounter.linePos(node.range[0]).line;
  }
  return undefined;
}

async function isDirectory(p: string): Promise<boolean> {
  return (await stat(p)).isDirectory();
}

/**
 * `kind` and `namespace/name` key of a raw document, as far as it can be read: namespaced kinds
 * without a namespace get `default` (as kubectl does); DNSZoneClass is cluster-scoped.
 */
export function documentIdentity(value: unknown): { kind: string; key: string } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } };
  const name = v.metadata?.name;
  if (typeof v.kind !== 'string' || typeof name !== 'string' || name === '') return undefined;
  if (v.kind === 'DNSZoneClass') return { kind: v.kind, key: name };
  const namespace = typeof v.metadata?.namespace === 'string' ? v.metadata.namespace : 'default';
  return { kind: v.kind, key: `${namespace}/${name}` };
}
