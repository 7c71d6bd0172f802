import { encodeRdata } from '../../dns/rdata.ts';
import { WireReader, WireWriter } from '../../dns/wire.ts';
import type { ServedRRset } from '../served-rrset.ts';
import type { JournalEntry } from '../transfer/journal.ts';
import { ImageRRset } from './image-zone.ts';

/** "ZKJ1": the first word of a journal entry in wire form. */
const JOURNAL_MAGIC = 0x5a4b4a31;

const encoded = new WeakMap<JournalEntry, SharedArrayBuffer | ArrayBuffer>();

/**
 * One IXFR journal entry (RFC 1995 §4: the records removed, then those added, from one serial to the
 * next) in wire form, as the builder sends it to every DNS worker (ADR 0020 §6): encoded once per
 * entry whatever the number of workers and sends (kept beside the entry), read by each worker into
 * RRsets whose RDATA without names stays a view into the buffer. Big-endian, as DNS: magic, from,
 * to, removed and added RRset counts (32 bits each); per RRset the owner in uncompressed wire form,
 * type (16), TTL (32), record count (16), and per record a 16-bit length and the uncompressed RDATA.
 */
export function journalWire(entry: JournalEntry): SharedArrayBuffer | ArrayBuffer {
  let buffer = encoded.get(entry);
  if (buffer === undefined) {
    const w = new WireWriter(256);
    w.compression = false;
    w.u32(JOURNAL_MAGIC);
    w.u32(entry.from >>> 0);
    w.u32(entry.to >>> 0);
    w.u32(entry.removed.length);
    w.u32(entry.added.length);
    for (const rrset of [...entry.removed, ...entry.added]) {
      w.name(rrset.owner, false);
      w.u16(rrset.type);
      w.u32(rrset.ttl >>> 0);
      const wire = rrset.wire;
      const count = wire?.length ?? rrset.rdata.length;
      w.u16(count);
      for (let i = 0; i < count; i++) {
        const at = w.length;
        w.u16(0);
        const known = wire?.[i];
        if (known !== undefined) w.bytes(known);
        else encodeRdata(rrset.rdata[i]!, w);
        w.patchU16(at, w.length - at - 2);
      }
    }
    const bytes = w.finish();
    // Shared: posted to every DNS thread, the one copy is read by all of them (ADR 0020 step 4).
    const shared = new SharedArrayBuffer(bytes.byteLength);
    new Uint8Array(shared).set(bytes);
    buffer = shared;
    encoded.set(entry, buffer);
  }
  return buffer;
}

/** Reads an entry written by `journalWire`; throws if the bytes are not one. */
export function readJournalWire(buffer: ArrayBuffer | SharedArrayBuffer): JournalEntry {
  const bytes = new Uint8Array(buffer);
  const r = new WireReader(bytes);
  if (r.u32() !== JOURNAL_MAGIC) throw new Error('journal entry: wrong magic number');
  const from = r.u32();
  const to = r.u32();
  const removedCount = r.u32();
  const addedCount = r.u32();
  const read = (): ServedRRset => {
    const owner = r.name();
    const type = r.u16();
    const ttl = r.u32();
    const count = r.u16();
    const blocks: Uint8Array[] = [];
    for (let i = 0; i < count; i++) blocks.push(r.bytes(r.u16()));
    return new ImageRRset(owner, type, ttl, blocks);
  };
  const removed: ServedRRset[] = [];
  const added: ServedRRset[] = [];
  for (let i = 0; i < removedCount; i++) removed.push(read());
  for (let i = 0; i < addedCount; i++) added.push(read());
  if (r.offset !== bytes.length) throw new Error('journal entry: bytes after its records');
  const entry = { from, to, removed, added };
  encoded.set(entry, buffer);
  return entry;
}
