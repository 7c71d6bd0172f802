/**
 * RDATA consisting of a single domain name: CNAME (RFC 1035 §3.3.1), NS (§3.3.11), PTR (§3.3.12) and the
 * PowerDNS ALIAS pseudo-type.
 */
import type { RdataCodec } from './codec.ts';
import type { AliasRdata, CnameRdata, NsRdata, PtrRdata } from './types.ts';

// RFC 3597 §4: compression is allowed only in the well-known types of RFC 1035 (CNAME, NS, PTR here).
export const cnameCodec: RdataCodec<CnameRdata> = {
  syntax: '<target name>',
  parse(f, origin) {
    f.expectCount(1);
    return { type: 'CNAME', target: f.name('target', origin) };
  },
  print: (r) => r.target,
  encode: (r, w) => w.name(r.target, true),
  decode: (r) => ({ type: 'CNAME', target: r.name() }),
};

export const nsCodec: RdataCodec<NsRdata> = {
  syntax: '<name server host name>',
  parse(f, origin) {
    f.expectCount(1);
    return { type: 'NS', host: f.name('host', origin) };
  },
  print: (r) => r.host,
  encode: (r, w) => w.name(r.host, true),
  decode: (r) => ({ type: 'NS', host: r.name() }),
};

export const ptrCodec: RdataCodec<PtrRdata> = {
  syntax: '<target name>',
  parse(f, origin) {
    f.expectCount(1);
    return { type: 'PTR', target: f.name('target', origin) };
  },
  print: (r) => r.target,
  encode: (r, w) => w.name(r.target, true),
  decode: (r) => ({ type: 'PTR', target: r.name() }),
};

// ALIAS is not an RFC 1035 type, so its name is never compressed (RFC 3597 §4).
export const aliasCodec: RdataCodec<AliasRdata> = {
  syntax: '<target name>',
  parse(f, origin) {
    f.expectCount(1);
    return { type: 'ALIAS', target: f.name('target', origin) };
  },
  print: (r) => r.target,
  encode: (r, w) => w.name(r.target, false),
  decode: (r) => ({ type: 'ALIAS', target: r.name() }),
};
