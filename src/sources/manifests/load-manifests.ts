import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Document, LineCounter, parseAllDocuments } from 'yaml';

/** One document read from a manifest file, before validation. */
export interface ManifestDocument {
  file: string;
  /** 1-based index of the document in its file. */
  document: number;
  /** 1-based line where the document starts. */
  line: number;
  value: unknown;
  /** Line of a field path such as `spec.records[1]`, for precise error reports. */
  lineOf(fieldPath: string): number | undefined;
}

export interface ManifestFileError {
  file: string;
  document?: number;
  line?: number;
  message: string;
}

export interface ManifestRead {
  documents: ManifestDocument[];
  /** Files that could not be read or parsed as YAML, in whole or in part. */
  fileErrors: ManifestFileError[];
}

/** Every `*.yaml`/`*.yml` below `root` (hidden files and folders skipped), in sorted order. */
export async function listManifestFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile() && /\.ya?ml$/i.test(entry.name)) out.push(full);
    }
  };
  await walk(root);
  return out;
}

/** Reads files (or folders, recursively) into YAML documents; empty documents are skipped. */
export async function readManifests(paths: readonly string[]): Promise<ManifestRead> {
  const documents: ManifestDocument[] = [];
  const fileErrors: ManifestFileError[] = [];
  for (const p of paths) {
    let files: string[];
    try {
      files = (await isDirectory(p)) ? await listManifestFiles(p) : [p];
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
      documents.push(...parsed.documents);
      fileErrors.push(...parsed.fileErrors);
    }
  }
  return { documents, fileErrors };
}

export function parseManifestText(text: string, file: string): ManifestRead {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
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
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) return;
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
  const { stat } = await import('node:fs/promises');
  return (await stat(p)).isDirectory();
}
