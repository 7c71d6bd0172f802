/** MX RDATA (RFC 1035 §3.3.9). */
import type { RdataCodec } from './codec.ts';
import type { MxRdata } from './types.ts';

export const mxCodec: RdataCodec<MxRdata> = {
  syntax: '<preference 0-65535> <exchange name>, e.g. "10 mail.example.com."',
  parse(f, origin) {
    f.expectCount(2);
    const preference = f.u16('preference');
    return { type: 'MX', preference, exchange: f.name('exchange', origin) };
  },
  print: (r) => `${r.preference} ${r.exchange}`,
  encode(r, w) {
    w.u16(r.preference);
    w.name(r.exchange, true); // RFC 3597 §4: MX is a well-known type, compression allowed
  },
  decode: (r) => ({ type: 'MX', preference: r.u16(), exchange: r.name() }),
};
