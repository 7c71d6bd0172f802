/** SRV RDATA (RFC 2782). */
import type { RdataCodec } from './codec.ts';
import type { SrvRdata } from './types.ts';

export const srvCodec: RdataCodec<SrvRdata> = {
  syntax: '<priority> <weight> <port> <target name>, e.g. "10 5 5060 sip.example.com."',
  parse(f, origin) {
    f.expectCount(4);
    const priority = f.u16('priority');
    const weight = f.u16('weight');
    const port = f.u16('port');
    return { type: 'SRV', priority, weight, port, target: f.name('target', origin) };
  },
  print: (r) => `${r.priority} ${r.weight} ${r.port} ${r.target}`,
  encode(r, w) {
    w.u16(r.priority);
    w.u16(r.weight);
    w.u16(r.port);
    w.name(r.target, false); // RFC 2782: the target name is not compressed
  },
  decode(r) {
    const priority = r.u16();
    const weight = r.u16();
    const port = r.u16();
    return { type: 'SRV', priority, weight, port, target: r.name() };
  },
};
