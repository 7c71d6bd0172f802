import { closeSync, constants, fstatSync, openSync, readSync, type Stats, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import {
  type ForeignObject,
  type FrontDoors,
  frontDoorId,
  NO_FRONT_DOORS,
  validateAny,
} from '../../api/frontdoors/index.ts';
import { API_VERSION, type Problem, type Resource } from '../../api/index.ts';
import { acceptUsualFields, acceptUsualRecordSet, type UsualRecordSet } from '../../api/resource.ts';
import { withParseSemiSpace } from '../../util/parse-young-generation.ts';
import { valuesValidAnywhere } from '../../zones/record-parse.ts';
import type { RecordSetReader } from './fast-yaml.ts';
import {
  documentIdentity,
  type ManifestDocument,
  type ManifestFileError,
  parseManifestText,
} from './load-manifests.ts';

/** Default per-file size limit of `serve --manifests` and `validate` (16 MiB). */
export const DEFAULT_MAX_MANIFEST_BYTES = 16 * 2 ** 20;

/** A validation problem of a document with the line of its field. */
export interface LocatedProblem extends Problem {
  line?: number;
}

/** One document of a manifest file, checked against the schema (transition rules aside). */
export interface ParsedDocument {
  /** 1-based index of the document in its file. */
  document: number;
  /** `kind` and `namespace/name` as far as they can be read, valid or not. */
  identity?: { kind: string; key: string };
  /** The valid resource, normalized; absent when the document is invalid. */
  resource?: Resource;
  /** A valid object of a front door's kind (`door` is the door's id), instead of `resource`. */
  foreign?: { door: string; object: ForeignObject };
  /** Why the document is invalid, each with its line. */
  problems?: LocatedProblem[];
}

/** A manifest file, read, parsed and checked. */
export interface ParsedManifest {
  documents: ParsedDocument[];
  /**
   * Per document (by its index in `documents`), whether its resource is a record set made exactly as
   * the manifest source keeps one (a literal of each object's fields, in their usual order): those
   * `decodeDocuments` made from the array form without a TTL. The source takes them as they are
   * instead of making them again (docs/benchmarks.md, eighth round). Absent: none is.
   */
  compact?: readonly boolean[];
  /**
   * Per document (by its index in `documents`), whether it is a record set whose values were parsed
   * where the file was (a parse thread) and hold in every zone (`valuesValidAnywhere`: a type without
   * names, each value valid, none repeated): the manifest source need not parse them again, and the
   * zone's model parses them once when it builds (docs/benchmarks.md, tenth round). False or absent:
   * the source parses them against the zone's origin, and reports a wrong value at its file and line.
   */
  checked?: readonly boolean[];
  /**
   * Per document (by its index in `documents`), the object's id (`Kind/namespace/name`, one flat
   * string) where `decodeDocuments` has it already (a usual record set, whose id crosses from the
   * parse thread as it is, its name cut from it: `encodeDocuments`): the manifest source keeps
   * this string as the id (its definitions, the definers, the state) instead of joining its own from
   * the identity, and the document has no `identity` (the id is its kind and key; one object and a
   * key string fewer per record set received). Absent or undefined: the document's `identity` says.
   */
  ids?: readonly (string | undefined)[];
  /**
   * Whether no two documents have the same id (a usual record set's as it came, `ids`, or its kind
   * and key joined): found where the file was parsed (`encodeDocuments`' first message of a file
   * says so, `decodeDocuments`). The manifest source then takes the file's definitions without
   * asking whether each id was defined before in the file (`FileDefinitions.listed`).
   */
  distinct?: boolean;
  /** The file as a whole: unreadable, too large, or YAML errors (then `documents` is empty). */
  fileErrors: ManifestFileError[];
}

/** Where to find a field of a document, for problems found after parsing. */
export interface LocateRequest {
  document: number;
  /** A field path such as `spec.records[1]`; without one, the line where the document starts. */
  path?: string;
}

/**
 * Reads and parses manifest files for the manifest source. Parsing a large file costs seconds of CPU;
 * the worker-thread implementation keeps that work off the thread that answers DNS.
 */
export interface ManifestParser {
  parse(file: string, maxBytes: number): Promise<ParsedManifest & { token: number }>;
  /** Lines of fields of a file parsed earlier (undefined where unknown). */
  locate(token: number, requests: readonly LocateRequest[]): Promise<(number | undefined)[]>;
  /** The caller is done with a parsed file: its text may be dropped. */
  release(token: number): void;
  close(): Promise<void>;
  /** Files worth having in flight at once (one per parse thread, plus one queued each); default 4. */
  readonly concurrency?: number;
}

/**
 * Reads `file` (at most `maxBytes`), parses it and validates every document. Returns the result and
 * a `locate` over the file's text for fields found wrong later.
 */
export async function parseManifestFile(
  file: string,
  maxBytes: number,
  doors: FrontDoors = NO_FRONT_DOORS,
): Promise<{
  parsed: ParsedManifest;
  locate?: (requests: readonly LocateRequest[]) => (number | undefined)[];
}> {
  return (await readAndCheck(file, maxBytes, doors, false)) as {
    parsed: ParsedManifest;
    locate?: (requests: readonly LocateRequest[]) => (number | undefined)[];
  };
}

/** A document as a parse thread sends it: a usual record set as the array of its values, else as it is. */
export type SentDocument = ParsedDocument | UsualRecordSet;

/** A file as a parse thread sends it, and how to find its problems' lines while it is held. */
interface FileToSend {
  parsed: Omit<ParsedManifest, 'documents'> & { documents: SentDocument[] };
  locate?: (requests: readonly LocateRequest[]) => (number | undefined)[];
}

/**
 * `parseManifestFile` as a parse thread sends the file (`encodeDocuments`): a record set of the usual
 * shape that `acceptResource` accepts comes as the array `encodeDocuments` would make of its parsed
 * document (`acceptUsualRecordSet`), without that document, its identity and its clean copy being
 * made (docs/benchmarks.md, twelfth round), and most without the YAML objects either: read from its
 * text (`USUAL_TEXT`, seventeenth round). The same text `encodeDocuments` makes of
 * `parseManifestFile`'s documents; anything else takes the path of `parseManifestFile`.
 */
export async function parseManifestFileToSend(
  file: string,
  maxBytes: number,
  doors: FrontDoors = NO_FRONT_DOORS,
): Promise<FileToSend> {
  return readAndCheck(file, maxBytes, doors, true);
}

async function readAndCheck(
  file: string,
  maxBytes: number,
  doors: FrontDoors,
  toSend: boolean,
): Promise<FileToSend> {
  let text: string;
  try {
    // A parse thread reads its file with blocking calls: it has nothing else to do meanwhile, and
    // each of the four calls awaited costs a hop to libuv's pool and back (docs/benchmarks.md,
    // eighteenth round). `validate` and the local parser read without blocking, as before.
    const read =
      (toSend ? readLimitedSync(file, maxBytes) : undefined) ?? (await readLimited(file, maxBytes));
    if (read.tooLarge !== undefined) {
      return {
        parsed: {
          documents: [],
          fileErrors: [
            {
              file,
              code: 'FILE_TOO_LARGE',
              message: `the file is ${read.tooLarge} bytes, above the limit of ${maxBytes} bytes per manifest file; split it into smaller files, or raise the limit with --max-manifest-bytes`,
            },
          ],
        },
      };
    }
    text = read.text;
  } catch (e) {
    return {
      parsed: {
        documents: [],
        fileErrors: [{ file, code: 'FILE_UNREADABLE', message: `cannot read: ${(e as Error).message}` }],
      },
    };
  }
  try {
    return checkText(text, file, doors, toSend);
  } catch (e) {
    return { parsed: { documents: [], fileErrors: [notParsed(file, e)] } };
  }
}

/**
 * The error of a file whose bytes could not be parsed, checked or sent (input the reader cannot take,
 * a front door's defect): that file fails alone, as an unreadable file does, its objects keep their
 * last valid versions and the rest of the folder loads. Thrown on, the same bytes would fail every
 * reload after.
 */
export function notParsed(file: string, error: unknown): ManifestFileError {
  return {
    file,
    code: 'FILE_NOT_PARSED',
    message: `cannot parse or check the file: ${(error as Error).message}; the objects it defined keep their last valid versions; split or simplify the file`,
  };
}

/** `readAndCheck` once the file's text is read. */
function checkText(text: string, file: string, doors: FrontDoors, toSend: boolean): FileToSend {
  // A usual record set is taken from its text by the parse thread (`USUAL_TEXT`), not made first.
  const read = parseManifestText(text, file, toSend ? USUAL_TEXT : undefined);
  // Made when a line is first asked for (most files never are).
  let byIndex: Map<number, ManifestDocument<UsualRecordSet>> | undefined;
  const documents: SentDocument[] = [];
  const checked: boolean[] = [];
  for (const doc of read.documents) {
    if (toSend) {
      // No front door is of Zonekeeper's own API version (`FrontDoors` refuses one), so none takes it.
      const usual = doc.taken ?? acceptUsualRecordSet(doc.value, doc.document);
      if (usual !== undefined) {
        const valid = valuesValidAnywhere(usual[5], usual[6]);
        // As `encodeDocuments` sends a usual record set whose values hold anywhere.
        if (valid) usual[0] = -usual[0];
        documents.push(usual);
        checked.push(valid);
        continue;
      }
    }
    let identity = documentIdentity(doc.value);
    const v = doc.value as { apiVersion?: unknown; kind?: unknown } | null;
    // No front door is of Zonekeeper's own API version: its documents skip the lookup.
    const door =
      doors.size > 0 && v !== null && typeof v === 'object' && v.apiVersion !== API_VERSION
        ? doors.find(v.apiVersion, v.kind)
        : undefined;
    if (door && identity) {
      // A front door's kind: known by the door's id; a cluster-scoped one by its name alone.
      const name = identity.key.slice(identity.key.indexOf('/') + 1);
      identity = { kind: frontDoorId(door), key: door.scope === 'Cluster' ? name : identity.key };
    }
    const result = validateAny(doc.value, doors);
    // Keys in this order (document, identity, then the rest): `encodeDocuments` reads them so.
    const parsed: ParsedDocument = { document: doc.document };
    if (identity) parsed.identity = identity;
    if (result.ok && result.door) {
      // What a door admits is kept as JSON (the state, the API, the status writes) and sent to the
      // main thread as JSON (`encodeDocuments`): on this thread too it goes through JSON, so a door
      // whose object no JSON can carry fails its file (`notParsed`), and values JSON changes
      // (Infinity to null) change alike: `validate` and `serve` judge the same object.
      const object = toSend
        ? result.foreign
        : (JSON.parse(JSON.stringify(result.foreign)) as typeof result.foreign);
      parsed.foreign = { door: frontDoorId(result.door), object };
    } else if (result.ok) {
      parsed.resource = result.resource;
    } else {
      parsed.problems = result.problems.map((p) => ({
        ...p,
        line: (p.path ? doc.lineOf(p.path) : undefined) ?? doc.line,
      }));
    }
    documents.push(parsed);
    const r = parsed.resource;
    checked.push(r?.kind === 'DNSRecordSet' && valuesValidAnywhere(r.spec.type, r.spec.records));
  }
  return {
    parsed: { documents, checked, fileErrors: read.fileErrors },
    locate: (requests) =>
      requests.map(({ document, path }) => {
        if (byIndex === undefined) {
          byIndex = new Map();
          for (const doc of read.documents) byIndex.set(doc.document, doc);
        }
        const doc = byIndex.get(document);
        if (!doc) return undefined;
        return (path ? doc.lineOf(path) : undefined) ?? doc.line;
      }),
  };
}

/**
 * A usual record set read straight from its text (`RecordSetReader` of `fast-yaml.ts`): its fields
 * checked as `acceptUsualRecordSet` checks the object the reader would make of them, to the array
 * it would give (docs/benchmarks.md, seventeenth round).
 */
export const USUAL_TEXT: RecordSetReader<UsualRecordSet> = {
  apiVersion: API_VERSION,
  kind: 'DNSRecordSet',
  accept: acceptUsualFields,
};

/** The file's text, or its size when above `maxBytes` (never more than `maxBytes + 1` bytes read). */
export async function readLimited(
  file: string,
  maxBytes: number,
): Promise<{ text: string; tooLarge?: undefined } | { tooLarge: number }> {
  const fd = await open(file, 'r');
  try {
    const { size } = await fd.stat();
    if (size > maxBytes) return { tooLarge: size };
    // The file may grow between stat and read: read one byte more than allowed to notice.
    const buffer = Buffer.allocUnsafe(Math.min(size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await fd.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) {
        if (length > maxBytes) return { tooLarge: Math.max(length, (await fd.stat()).size) };
        break;
      }
    }
    return { text: buffer.toString('utf8', 0, length) };
  } finally {
    await fd.close();
  }
}

/** The blocking calls `readLimitedSync` makes that may answer `EAGAIN` (tests give their own). */
export interface SyncReadCalls {
  open(file: string, flags: number): number;
  read(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
}

const SYNC_READ_CALLS: SyncReadCalls = { open: openSync, read: readSync };

/**
 * `readLimited` with blocking calls, for a parse thread: the same answers for a regular file.
 * Undefined, for `readLimited` to read as before (whose wait, if any, is the pool's, not the
 * thread's), for anything else and wherever this would answer otherwise:
 * - a path that is not a regular file (a FIFO, a device, a folder) or cannot be stat'ed (its error
 *   is then `readLimited`'s own): asked of the path, not opened, since an open, even one that does
 *   not wait, wakes a FIFO's waiting writer and what it wrote would be lost with the descriptor;
 * - an open or a read that would wait (`EAGAIN`: another process holds a lease on the file, as
 *   Samba's kernel oplocks and NFS delegations do, or a FUSE file system answers so; `readLimited`
 *   waits as it always did);
 * - a file swapped for something else between the stat and the open.
 */
export function readLimitedSync(
  file: string,
  maxBytes: number,
  calls: SyncReadCalls = SYNC_READ_CALLS,
): { text: string; tooLarge?: undefined } | { tooLarge: number } | undefined {
  let pathStats: Stats;
  try {
    pathStats = statSync(file);
  } catch {
    return undefined;
  }
  if (!pathStats.isFile()) return undefined;
  let fd: number;
  try {
    fd = calls.open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return undefined;
    throw error;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return undefined;
    const { size } = stats;
    if (size > maxBytes) return { tooLarge: size };
    // The file may grow between stat and read: read one byte more than allowed to notice.
    const buffer = Buffer.allocUnsafe(Math.min(size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      let bytesRead: number;
      try {
        bytesRead = calls.read(fd, buffer, length, buffer.length - length, length);
      } catch (error) {
        // A read that would wait (a FUSE file system, a mandatory lock): `readLimited` waits.
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return undefined;
        throw error;
      }
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) {
        if (length > maxBytes) return { tooLarge: Math.max(length, fstatSync(fd).size) };
        break;
      }
    }
    return { text: buffer.toString('utf8', 0, length) };
  } finally {
    closeSync(fd);
  }
}

/** Parses on the calling thread (`validate`, `zone export`, tests). */
export class LocalManifestParser implements ManifestParser {
  private readonly doors: FrontDoors;
  private next = 0;

  constructor(doors: FrontDoors = NO_FRONT_DOORS) {
    this.doors = doors;
  }

  private readonly held = new Map<number, (requests: readonly LocateRequest[]) => (number | undefined)[]>();

  async parse(file: string, maxBytes: number): Promise<ParsedManifest & { token: number }> {
    const { parsed, locate } = await parseManifestFile(file, maxBytes, this.doors);
    const token = ++this.next;
    if (locate) this.held.set(token, locate);
    return { ...parsed, token };
  }

  async locate(token: number, requests: readonly LocateRequest[]): Promise<(number | undefined)[]> {
    const locate = this.held.get(token);
    return locate ? locate(requests) : requests.map(() => undefined);
  }

  release(token: number): void {
    this.held.delete(token);
  }

  async close(): Promise<void> {
    this.held.clear();
  }
}

/** Messages between the source and its parse worker (`parse-worker.ts`). */
export type ParserRequest =
  | { type: 'parse'; id: number; file: string; maxBytes: number }
  | { type: 'locate'; id: number; token: number; requests: LocateRequest[] }
  | { type: 'release'; token: number };
export type ParserResponse =
  /**
   * `json`: the documents as one JSON text (`encodeDocuments`). Cheaper than the structured clone of
   * the objects on both threads (`JSON.stringify` about 40 % less CPU than serializing them, and
   * `JSON.parse` 40 % less than deserializing them on the main thread); what a document holds is JSON
   * already (YAML scalars, checked and normalized), as the state log writes it.
   */
  | { type: 'documents'; id: number; json: string }
  | { type: 'parsed'; id: number; token: number; fileErrors: ManifestFileError[] }
  | { type: 'located'; id: number; lines: (number | undefined)[] }
  /** The file could not be parsed or sent (`notParsed`); documents sent of it before are dropped. */
  | { type: 'unparsed'; id: number; error: ManifestFileError }
  | { type: 'failed'; id: number; message: string };

/**
 * A parse thread's documents as the JSON text of one message: one array. A record set in the usual
 * shape (the API version, its kind, metadata of a name and a namespace, a spec of a zoneRef by name, a
 * name, a type, perhaps a TTL, and records, named by its own kind and key) goes as its values, one
 * after another in that array, instead of the object (docs/benchmarks.md, seventh and fifteenth
 * rounds): first a number, its document's number times `FLAGS` plus which of the values that may be
 * left out follow (`WITH_*`; negated where its values hold anywhere), so a number starts one; then
 * `namespace?, id, zoneRef name?, spec name, type?, ttl?, records`. The namespace, zone and type go
 * only where they differ from those of the usual record set before it in the message (a file's
 * record sets nearly always share them; thirteenth round, then as a 0 each), the TTL only where it
 * has one. Its name goes as the object's id, `DNSRecordSet/namespace/name`: the string the manifest
 * source keeps, made here instead of joined on the main thread, which cuts the name from it
 * (`JSON.parse` takes a string of up to 10 characters into V8's table of internalized strings, a
 * lookup per record set, and copies a longer one; fifteenth round). Its spec's name goes as the
 * number of its place in the message's array where an earlier record set of the message had the
 * same one (a file of several zones repeats `www`, `@`, `mail`): a number read instead of a lookup
 * of the string in that table. Records of one value go as that string, not an array of it: the main
 * thread's array literal costs less than `JSON.parse`'s array (sixteenth round). Every other
 * document goes as it is, an object. `decodeDocuments` gives back objects equal to these, their keys
 * in the same order.
 *
 * The first message of a file (`from` 0; `documents` is the whole file) starts with `true` where no
 * two documents of the file have the same id (`distinctIds`): the parse thread asks that of sets of
 * names, which the main thread, the bottleneck of a first load, would otherwise ask of the file's
 * map per document (`ParsedManifest.distinct`; eighteenth round).
 */
export function encodeDocuments(
  documents: readonly SentDocument[],
  checked?: readonly boolean[],
  from = 0,
  to = documents.length,
): string {
  const out: unknown[] = [];
  if (from === 0 && to > 0 && distinctIds(documents)) out.push(true);
  let before: UsualRecordSet | undefined;
  // Where each owner name sent in this message stands in `out`.
  let owners: Map<string, number> | undefined;
  for (let i = from; i < to; i++) {
    const d = documents[i]!;
    // Sent as it is already (`parseManifestFileToSend`), its document's number negated where it holds anywhere.
    let usual: UsualRecordSet | undefined;
    if (Array.isArray(d)) usual = d;
    else {
      usual = usualRecordSet(d);
      // A usual record set whose values hold anywhere (`ParsedManifest.checked`) goes with its
      // document's number negated (documents count from 1): no byte more.
      if (usual && checked?.[i] === true) usual[0] = -usual[0];
    }
    if (usual === undefined) {
      out.push(d);
      continue;
    }
    const namespace = usual[1];
    const flags =
      (usual.length > 7 ? WITH_TTL : 0) |
      (before === undefined || namespace !== before[1] ? WITH_NAMESPACE : 0) |
      (before === undefined || usual[3] !== before[3] ? WITH_ZONE : 0) |
      (before === undefined || usual[5] !== before[5] ? WITH_TYPE : 0);
    const document = usual[0];
    out.push(document < 0 ? document * FLAGS - flags : document * FLAGS + flags);
    if ((flags & WITH_NAMESPACE) !== 0) out.push(namespace);
    out.push(`${RECORD_SET}/${namespace}/${usual[2]}`);
    if ((flags & WITH_ZONE) !== 0) out.push(usual[3]);
    const owner = usual[4];
    owners ??= new Map();
    const at = owners.get(owner);
    if (at === undefined) {
      owners.set(owner, out.length);
      out.push(owner);
    } else out.push(at);
    if ((flags & WITH_TYPE) !== 0) out.push(usual[5]);
    if (usual.length > 7) out.push(usual[7]);
    const records = usual[6];
    out.push(records.length === 1 && typeof records[0] === 'string' ? records[0] : records);
    before = usual;
  }
  return JSON.stringify(out);
}

/**
 * The documents of `encodeDocuments`' text, appended to `into`; with `compact`, whether each is a
 * record set made as the manifest source keeps one (`ParsedManifest.compact`), appended to it; with
 * `checked`, whether its values hold anywhere (`ParsedManifest.checked`), appended to it; with
 * `ids`, the id of each usual record set as it crossed (`ParsedManifest.ids`), appended to it, and
 * such a document comes without its `identity` (the id says it: `DNSRecordSet/namespace/name`).
 * With `file` (and `ids`), `file.distinct` becomes true at a file's first message that says no two
 * of its documents have the same id (`ParsedManifest.distinct`; it starts false).
 */
export function decodeDocuments(
  json: string,
  into: ParsedDocument[],
  compact?: boolean[],
  checked?: boolean[],
  ids?: (string | undefined)[],
  file?: { distinct: boolean },
): void {
  const values = JSON.parse(json) as (ParsedDocument | number | string | string[] | true)[];
  // The namespace, zone and type of the usual record set before (sent when they change).
  let namespace = '';
  let zone = '';
  let type = '';
  // One zoneRef per run of record sets of one zone, not one each: the manifest source puts the
  // zone's shared one in its place (`SharedRuns`, `compactRecordSet`); nothing may write to it in
  // place (`shareStrings` writes its name back only as the same string).
  let zoneRef = { name: zone };
  let i = 0;
  if (values[0] === true) {
    // Only a file's first message says so, before anything of the file was received.
    if (file !== undefined && ids !== undefined) file.distinct = into.length === 0;
    i = 1;
  }
  while (i < values.length) {
    const head = values[i];
    if (typeof head !== 'number') {
      into.push(head as ParsedDocument);
      compact?.push(false);
      checked?.push(false);
      ids?.push(undefined);
      i++;
      continue;
    }
    const n = head < 0 ? -head : head;
    const flags = n % FLAGS;
    const document = (n - flags) / FLAGS;
    i++;
    if ((flags & WITH_NAMESPACE) !== 0) namespace = values[i++] as string;
    const id = values[i++] as string;
    // The name is what follows `DNSRecordSet/namespace/` in the id.
    const name = id.slice(RECORD_SET.length + namespace.length + 2);
    if ((flags & WITH_ZONE) !== 0) {
      zone = values[i++] as string;
      zoneRef = { name: zone };
    }
    const o = values[i++] as string | number;
    // An owner sent before in this message: where it stands.
    const owner = typeof o === 'number' ? (values[o] as string) : o;
    if ((flags & WITH_TYPE) !== 0) type = values[i++] as string;
    const ttl = (flags & WITH_TTL) !== 0 ? (values[i++] as number) : undefined;
    // Records of one value crossed as that string.
    const r = values[i++] as string | string[];
    const records = typeof r === 'string' ? [r] : r;
    // With a TTL the spec's keys are in the schema's order (`ttl` before `records`), not the source's.
    compact?.push(ttl === undefined);
    checked?.push(head < 0);
    const resource = {
      apiVersion: API_VERSION,
      kind: RECORD_SET,
      metadata: { name, namespace },
      spec:
        ttl === undefined
          ? { zoneRef, name: owner, type, records }
          : { zoneRef, name: owner, type, ttl, records },
    } as Resource;
    if (ids === undefined) {
      into.push({ document, identity: { kind: RECORD_SET, key: `${namespace}/${name}` }, resource });
      continue;
    }
    // The id the source keeps (one flat string, as it crossed) stands for the identity, not made.
    ids.push(id);
    into.push({ document, resource });
  }
}

/**
 * A usual record set's first value: its document's number times `FLAGS`, plus which values follow
 * (`WITH_*`), negated where its values hold anywhere.
 */
const FLAGS = 16;
const WITH_TTL = 1;
const WITH_NAMESPACE = 2;
const WITH_ZONE = 4;
const WITH_TYPE = 8;

const RECORD_SET = 'DNSRecordSet';

/**
 * Whether no two documents have the same id as the manifest source makes it (`DNSRecordSet/namespace/name`
 * of a usual record set, `kind/key` of another document's identity; a document without an identity
 * has none): asked of a set of names per namespace for record sets, no id made, and of a set of the
 * other ids (a file's few zones and classes). A kind or a record set's namespace with a `/` in it
 * (none is one: the schema and the front doors' ids have none) answers false: without one, two
 * such ids are the same exactly when their kinds, namespaces and names are.
 */
function distinctIds(documents: readonly SentDocument[]): boolean {
  let namespace: string | undefined;
  let names: Set<string> | undefined;
  let byNamespace: Map<string, Set<string>> | undefined;
  let others: Set<string> | undefined;
  for (const d of documents) {
    let ns: string;
    let name: string;
    const usual = Array.isArray(d) ? d : usualRecordSet(d);
    if (usual !== undefined) {
      ns = usual[1];
      name = usual[2];
    } else {
      const identity = (d as ParsedDocument).identity;
      if (identity === undefined) continue;
      const { kind, key } = identity;
      if (kind.includes('/')) return false;
      if (kind !== RECORD_SET) {
        others ??= new Set();
        const size = others.size;
        if (others.add(`${kind}/${key}`).size === size) return false;
        continue;
      }
      const slash = key.indexOf('/');
      if (slash < 0) return false;
      ns = key.slice(0, slash);
      name = key.slice(slash + 1);
    }
    if (ns !== namespace || names === undefined) {
      namespace = ns;
      if (ns.includes('/')) return false;
      byNamespace ??= new Map();
      names = byNamespace.get(ns);
      if (names === undefined) {
        names = new Set();
        byNamespace.set(ns, names);
      }
    }
    const size = names.size;
    if (names.add(name).size === size) return false;
  }
  return true;
}

/** The document as an array of its values when it is a record set in the usual shape (see above). */
function usualRecordSet(d: ParsedDocument): UsualRecordSet | undefined {
  const r = d.resource as Record<string, unknown> | undefined;
  if (r === undefined || !keysAre(d, DOCUMENT_KEYS) || typeof d.document !== 'number') return undefined;
  if (r.apiVersion !== API_VERSION || r.kind !== 'DNSRecordSet' || !keysAre(r, RESOURCE_KEYS))
    return undefined;
  const m = r.metadata as Record<string, unknown>;
  const s = r.spec as Record<string, unknown>;
  const z = s.zoneRef as Record<string, unknown> | undefined;
  const { name, namespace } = m;
  if (!keysAre(m, META_KEYS) || typeof name !== 'string' || typeof namespace !== 'string') return undefined;
  const withTtl = keysAre(s, SPEC_KEYS_TTL);
  if (!withTtl && !keysAre(s, SPEC_KEYS)) return undefined;
  if (typeof z !== 'object' || z === null || !keysAre(z, REF_KEYS) || typeof z.name !== 'string')
    return undefined;
  const { name: owner, type, records, ttl } = s;
  if (typeof owner !== 'string' || typeof type !== 'string' || !Array.isArray(records)) return undefined;
  if (withTtl && typeof ttl !== 'number') return undefined;
  const id = d.identity;
  if (!id || !keysAre(id, IDENTITY_KEYS) || id.kind !== 'DNSRecordSet' || !isKeyOf(id.key, namespace, name))
    return undefined;
  // A checked resource's records are strings (the schema's).
  return withTtl
    ? [d.document, namespace, name, z.name, owner, type, records as string[], ttl as number]
    : [d.document, namespace, name, z.name, owner, type, records as string[]];
}

/** Whether `key` is `${namespace}/${name}`, without making that string. */
function isKeyOf(key: string, namespace: string, name: string): boolean {
  return (
    key.length === namespace.length + 1 + name.length &&
    key.charCodeAt(namespace.length) === 47 /* / */ &&
    key.startsWith(namespace) &&
    key.endsWith(name)
  );
}

const DOCUMENT_KEYS = ['document', 'identity', 'resource'];
const IDENTITY_KEYS = ['kind', 'key'];
const RESOURCE_KEYS = ['apiVersion', 'kind', 'metadata', 'spec'];
const META_KEYS = ['name', 'namespace'];
const SPEC_KEYS = ['zoneRef', 'name', 'type', 'records'];
// The order the schema's normalization gives them.
const SPEC_KEYS_TTL = ['zoneRef', 'name', 'type', 'ttl', 'records'];
const REF_KEYS = ['name'];

/** `Object.hasOwn`, as V8 answers it fastest inside a `for...in` over the same object. */
const hasOwn = Object.prototype.hasOwnProperty;

/** Whether the object's own keys are exactly these, in this order (no array of them made). */
function keysAre(o: object, keys: readonly string[]): boolean {
  let i = 0;
  for (const key in o) {
    if (!hasOwn.call(o, key) || key !== keys[i]) return false;
    i++;
  }
  return i === keys.length;
}

/** Documents per message from the worker: each message is received on its own turn of the event loop. */
export const DOCUMENTS_PER_MESSAGE = 500;

interface Waiting {
  resolve: (value: never) => void;
  reject: (error: Error) => void;
  documents: ParsedDocument[];
  compact: boolean[];
  checked: boolean[];
  ids: (string | undefined)[];
  /** `ParsedManifest.distinct` as the messages said so far (`decodeDocuments`). */
  file: { distinct: boolean };
}

/**
 * Parses in a worker thread: reading, YAML and schema checks never run on the thread that answers
 * DNS. Results come back in messages of a few hundred documents, so receiving them does not hold the
 * event loop either. A worker that dies is replaced at the next request.
 */
export class WorkerManifestParser implements ManifestParser {
  /** Modules of front doors loaded with `--front-door`: the worker loads them too. */
  private readonly frontDoorModules: readonly string[];
  private worker: Worker | undefined;
  /** Files the thread keeps for `locate` until released (the oldest go first). */
  private readonly held: number;

  constructor(frontDoorModules: readonly string[] = [], held = 8) {
    this.frontDoorModules = frontDoorModules;
    this.held = held;
  }

  private next = 0;
  private readonly waiting = new Map<number, Waiting>();

  async parse(file: string, maxBytes: number): Promise<ParsedManifest & { token: number }> {
    const id = ++this.next;
    const { documents, token, fileErrors, compact, checked, ids, distinct } = await this.request<{
      documents: ParsedDocument[];
      token: number;
      fileErrors: ManifestFileError[];
      compact: boolean[];
      checked: boolean[];
      ids: (string | undefined)[];
      distinct: boolean;
    }>(id, { type: 'parse', id, file, maxBytes });
    return { documents, fileErrors, token, compact, checked, ids, distinct };
  }

  async locate(token: number, requests: readonly LocateRequest[]): Promise<(number | undefined)[]> {
    const id = ++this.next;
    const { lines } = await this.request<{ lines: (number | undefined)[] }>(id, {
      type: 'locate',
      id,
      token,
      requests: [...requests],
    });
    return lines;
  }

  release(token: number): void {
    this.worker?.postMessage({ type: 'release', token } satisfies ParserRequest);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private request<T>(id: number, message: ParserRequest): Promise<T> {
    const worker = this.start();
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, {
        resolve: resolve as (value: never) => void,
        reject,
        documents: [],
        compact: [],
        checked: [],
        ids: [],
        file: { distinct: false },
      });
      worker.postMessage(message);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    // Its young generation at full size from the start (src/util/parse-young-generation.ts).
    const worker = withParseSemiSpace(
      () =>
        new Worker(new URL('./parse-worker.ts', import.meta.url), {
          name: 'zk-parse',
          workerData: { frontDoorModules: [...this.frontDoorModules], held: this.held },
        }),
    );
    worker.unref();
    worker.on('message', (m: ParserResponse) => {
      const waiting = this.waiting.get(m.id);
      if (!waiting) return;
      switch (m.type) {
        case 'documents':
          decodeDocuments(
            m.json,
            waiting.documents,
            waiting.compact,
            waiting.checked,
            waiting.ids,
            waiting.file,
          );
          return;
        case 'parsed':
          this.waiting.delete(m.id);
          waiting.resolve({
            documents: waiting.documents,
            token: m.token,
            fileErrors: m.fileErrors,
            compact: waiting.compact,
            checked: waiting.checked,
            ids: waiting.ids,
            // Said by the file's first message.
            distinct: waiting.file.distinct,
          } as never);
          return;
        case 'unparsed':
          this.waiting.delete(m.id);
          waiting.resolve({
            documents: [],
            // Never held: `locate` finds no line, `release` has nothing to drop.
            token: 0,
            fileErrors: [m.error],
            compact: [],
            checked: [],
            ids: [],
            distinct: false,
          } as never);
          return;
        case 'located':
          this.waiting.delete(m.id);
          waiting.resolve({ lines: m.lines } as never);
          return;
        case 'failed':
          this.waiting.delete(m.id);
          waiting.reject(new Error(m.message));
      }
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const w of this.waiting.values()) w.reject(error);
      this.waiting.clear();
    };
    worker.on('error', (e) => fail(new Error(`manifest parser: ${e.message}`)));
    worker.on('exit', (code) => fail(new Error(`manifest parser exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}

/** Parse threads of `serve` while it loads the folder at start-up: one per CPU, at most this many. */
export const MAX_START_PARSE_THREADS = 4;

/** The parse threads for this machine at start-up (one per CPU the process may use, 1–4). */
export function startParseThreads(): number {
  return Math.max(1, Math.min(availableParallelism(), MAX_START_PARSE_THREADS));
}

/**
 * Several parse threads (`WorkerManifestParser`s): each file goes to the thread with the fewest files
 * in flight, so a folder loaded at start-up is parsed on every CPU at once. None of them answers DNS.
 * `shrink` closes all but the first few once the big load is over (an edit parses one file; idle
 * threads would only hold memory); a thread still holding a file's text for `locate` is closed when
 * that file is released.
 */
export class ManifestParserPool implements ManifestParser {
  private readonly parsers: WorkerManifestParser[] = [];
  /** Files in flight per thread. */
  private readonly busy: number[] = [];
  /** Tokens of files held (parsed, not released yet) per thread. */
  private readonly holding: number[] = [];
  /** Parses per thread since the start (for tests and logs). */
  private readonly parses: number[] = [];
  private readonly tokens = new Map<number, { thread: number; token: number }>();
  private active: number;
  private next = 0;

  constructor(threads: number, frontDoorModules: readonly string[] = []) {
    if (!Number.isInteger(threads) || threads < 1) throw new Error('a parser pool needs at least one thread');
    // The threads share the 8 files a single thread keeps for `locate`, so more threads hold no more text.
    const held = Math.max(2, Math.ceil(8 / threads));
    for (let i = 0; i < threads; i++) {
      this.parsers.push(new WorkerManifestParser(frontDoorModules, held));
      this.busy.push(0);
      this.holding.push(0);
      this.parses.push(0);
    }
    this.active = threads;
  }

  /** Threads that take new files. */
  get threads(): number {
    return this.active;
  }

  get concurrency(): number {
    return Math.max(4, 2 * this.active);
  }

  /** Files parsed by each thread so far. */
  parsedPerThread(): readonly number[] {
    return [...this.parses];
  }

  async parse(file: string, maxBytes: number): Promise<ParsedManifest & { token: number }> {
    let thread = 0;
    for (let i = 1; i < this.active; i++) if (this.busy[i]! < this.busy[thread]!) thread = i;
    this.busy[thread]!++;
    this.parses[thread]!++;
    let parsed: ParsedManifest & { token: number };
    try {
      parsed = await this.parsers[thread]!.parse(file, maxBytes);
    } finally {
      this.busy[thread]!--;
    }
    const token = ++this.next;
    this.tokens.set(token, { thread, token: parsed.token });
    this.holding[thread]!++;
    return { ...parsed, token };
  }

  async locate(token: number, requests: readonly LocateRequest[]): Promise<(number | undefined)[]> {
    const held = this.tokens.get(token);
    if (!held) return requests.map(() => undefined);
    return this.parsers[held.thread]!.locate(held.token, requests);
  }

  release(token: number): void {
    const held = this.tokens.get(token);
    if (!held) return;
    this.tokens.delete(token);
    this.holding[held.thread]!--;
    this.parsers[held.thread]!.release(held.token);
    this.closeIdle();
  }

  /** New files go to the first `threads` threads only; the others close once idle. */
  shrink(threads: number): void {
    this.active = Math.max(1, Math.min(threads, this.active));
    this.closeIdle();
  }

  async close(): Promise<void> {
    this.tokens.clear();
    await Promise.all(this.parsers.map((p) => p.close()));
  }

  private closeIdle(): void {
    for (let i = this.active; i < this.parsers.length; i++)
      if (this.busy[i] === 0 && this.holding[i] === 0) void this.parsers[i]!.close();
  }
}
