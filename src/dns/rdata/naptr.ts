/** NAPTR RDATA (RFC 3403 §4.1). */
import { DnsError } from '../errors.ts';
import { binaryFromBytes } from '../octets.ts';
import { MAX_CHARACTER_STRING, printCharacterString } from '../presentation.ts';
import type { WireReader, WireWriter } from '../wire.ts';
import type { RdataCodec } from './codec.ts';
import type { NaptrRdata } from './types.ts';

function writeCharacterString(w: WireWriter, s: string): void {
  if (s.length > MAX_CHARACTER_STRING) {
    throw new DnsError(
      'BAD_RDATA',
      `cannot encode NAPTR string of ${s.length} octets: character-strings hold at most 255 (RFC 1035 §3.3)`,
    );
  }
  w.u8(s.length);
  w.binary(s);
}

function readCharacterString(r: WireReader): string {
  return binaryFromBytes(r.bytes(r.u8()));
}

export const naptrCodec: RdataCodec<NaptrRdata> = {
  syntax: '<order> <preference> "<flags>" "<services>" "<regexp>" <replacement name>',
  parse(f, origin) {
    f.expectCount(6);
    return {
      type: 'NAPTR',
      order: f.u16('order'),
      preference: f.u16('preference'),
      flags: f.characterString('flags'),
      services: f.characterString('services'),
      regexp: f.characterString('regexp'),
      replacement: f.name('replacement', origin),
    };
  },
  print: (r) =>
    `${r.order} ${r.preference} ${printCharacterString(r.flags)} ${printCharacterString(r.services)} ${printCharacterString(r.regexp)} ${r.replacement}`,
  encode(r, w) {
    w.u16(r.order);
    w.u16(r.preference);
    writeCharacterString(w, r.flags);
    writeCharacterString(w, r.services);
    writeCharacterString(w, r.regexp);
    w.name(r.replacement, false); // RFC 3403 §4.1 / RFC 3597 §4: not compressed
  },
  decode(r) {
    const order = r.u16();
    const preference = r.u16();
    const flags = readCharacterString(r);
    const services = readCharacterString(r);
    const regexp = readCharacterString(r);
    return { type: 'NAPTR', order, preference, flags, services, regexp, replacement: r.name() };
  },
};
