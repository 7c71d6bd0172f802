/** SOA RDATA (RFC 1035 §3.3.13). */
import type { RdataCodec } from './codec.ts';
import type { SoaRdata } from './types.ts';

/** True when the text has an '@' that is not escaped, i.e. an e-mail address where a name belongs. */
function hasUnescapedAt(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x40 && text.length > 1) return true;
  }
  return false;
}

/** "john.doe@example.com" -> "john\\.doe.example.com." (RFC 1035 §8 mailbox encoding). */
function mailboxAsName(mailbox: string): string {
  const at = mailbox.indexOf('@');
  const local = mailbox.slice(0, at).replaceAll('.', '\\.');
  const domain = mailbox.slice(at + 1);
  return `${local}.${domain}${domain.endsWith('.') ? '' : '.'}`;
}

export const soaCodec: RdataCodec<SoaRdata> = {
  syntax:
    '<mname> <rname> <serial> <refresh> <retry> <expire> <minimum>, e.g. "ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 3600"',
  parse(f, origin) {
    f.expectCount(7);
    const mname = f.name('mname', origin);
    const rnameText = f.tokens[1]!.text;
    if (hasUnescapedAt(rnameText)) {
      throw f.invalid(
        'rname',
        rnameText,
        `the mailbox is written as a name with the "@" replaced by a dot (dots before the "@" escaped), e.g. "${mailboxAsName(rnameText)}" (RFC 1035 §8)`,
      );
    }
    const rname = f.name('rname', origin);
    return {
      type: 'SOA',
      mname,
      rname,
      serial: f.u32('serial'),
      refresh: f.ttl('refresh'),
      retry: f.ttl('retry'),
      expire: f.ttl('expire'),
      minimum: f.ttl('minimum'),
    };
  },
  print: (r) => `${r.mname} ${r.rname} ${r.serial} ${r.refresh} ${r.retry} ${r.expire} ${r.minimum}`,
  encode(r, w) {
    // RFC 3597 §4: SOA is a well-known type, its names may be compressed.
    w.name(r.mname, true);
    w.name(r.rname, true);
    w.u32(r.serial);
    w.u32(r.refresh);
    w.u32(r.retry);
    w.u32(r.expire);
    w.u32(r.minimum);
  },
  decode(r) {
    const mname = r.name();
    const rname = r.name();
    return {
      type: 'SOA',
      mname,
      rname,
      serial: r.u32(),
      refresh: r.u32(),
      retry: r.u32(),
      expire: r.u32(),
      minimum: r.u32(),
    };
  },
};
