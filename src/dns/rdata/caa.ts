/** CAA RDATA (RFC 8659 §4.1). */

import { binaryFromBytes } from '../octets.ts';
import { printCharacterString } from '../presentation.ts';
import { WireError } from '../wire.ts';
import type { RdataCodec } from './codec.ts';
import type { CaaRdata } from './types.ts';

/** RFC 8659 §4.1.1: tags are 1+ ASCII letters and digits. */
export function isCaaTag(tag: string): boolean {
  if (tag.length === 0 || tag.length > 255) return false;
  for (let i = 0; i < tag.length; i++) {
    const c = tag.charCodeAt(i);
    const ok = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    if (!ok) return false;
  }
  return true;
}

export const caaCodec: RdataCodec<CaaRdata> = {
  syntax: '<flags 0-255> <tag> <value>, e.g. 0 issue "letsencrypt.org"',
  parse(f) {
    f.expectCount(3);
    const flags = f.u8('flags');
    const tagToken = f.next('tag');
    if (tagToken.quoted || !isCaaTag(tagToken.text)) {
      throw f.invalid(
        'tag',
        tagToken.text,
        'expected an unquoted tag of ASCII letters and digits such as issue, issuewild or iodef (RFC 8659 §4.1)',
      );
    }
    return { type: 'CAA', flags, tag: tagToken.text, value: f.octetString('value') };
  },
  print: (r) => `${r.flags} ${r.tag} ${printCharacterString(r.value)}`,
  encode(r, w) {
    w.u8(r.flags);
    w.u8(r.tag.length);
    w.binary(r.tag);
    w.binary(r.value); // RFC 8659 §4.1.1: the value is the remainder of the RDATA
  },
  decode(r, end) {
    const flags = r.u8();
    const tagLength = r.u8();
    const tag = binaryFromBytes(r.bytes(tagLength));
    if (!isCaaTag(tag)) {
      throw new WireError(
        'BAD_RDATA',
        `CAA tag ${JSON.stringify(tag)} is not 1+ ASCII letters and digits (RFC 8659 §4.1)`,
      );
    }
    const value = binaryFromBytes(r.bytes(end - r.offset));
    return { type: 'CAA', flags, tag, value };
  },
};
