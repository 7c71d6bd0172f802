/**
 * Signing cost: a zone of the bench generator (`bench/lib/zone.ts`) signed whole by the reference
 * signer (`src/zones/dnssec-signer.ts`) with each algorithm and NSEC or NSEC3, beside OpenSSL's own
 * randomized signing of the same signed-data octets for scale, the cost of re-signing one changed
 * RRset, and the whole zone signed again after one change with the previous signatures taken again
 * (`SignatureReuse`, what the built-in server did per change before the incremental signer), against the
 * incremental signer (`src/zones/dnssec-incremental.ts`, what it does now): its first signing of the
 * zone, then one changed RRset and one added name; and what stays O(zone) in the server after the
 * signer (handing the records over from the signing thread, building the signed snapshot).
 *
 *   npx node bench/dnssec.ts [--records 100000] [--algorithms 13,15] [--json]
 */
import { sign as nodeSign } from 'node:crypto';
import { parseArgs } from 'node:util';
import { packRecords, unpackRecords } from '../src/backends/builtin/zone-signing.ts';
import { canonicalRdata } from '../src/dns/dnssec/canonical.ts';
import { NSEC3_RFC9276 } from '../src/dns/dnssec/denial.ts';
import { type DnssecAlgorithm, generateDnssecKey, privateKeyObject } from '../src/dns/dnssec/keys.ts';
import { SignatureReuse, signedData, signRRset } from '../src/dns/dnssec/rrsig.ts';
import { typeCode } from '../src/dns/rrtype.ts';
import { ZoneDnssec } from '../src/server/zone-dnssec.ts';
import { IncrementalSigner } from '../src/zones/dnssec-incremental.ts';
import { signZone } from '../src/zones/dnssec-signer.ts';
import { signatureWindow } from '../src/zones/dnssec-window.ts';
import { assemble, generateZone } from './lib/zone.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    algorithms: { type: 'string', default: '13,15' },
    json: { type: 'boolean', default: false },
  },
});
const origin = 'bench.example.';
const nameServers = [`ns1.${origin}`, `ns2.${origin}`];
const zone = assemble(
  generateZone(origin, { name: 'bench', namespace: 'bench' }, Number(values.records), {
    withNameServers: true,
  }),
  nameServers,
);
const toSign = { origin, soa: { ...zone.soa, serial: 1 }, rrsets: zone.rrsets };
const now = Math.floor(Date.now() / 1000);
const window = { inception: now - 3600, expiration: now + 14 * 86400 };
// The windows of ADR 0021 at one signing time, as the built-in server signs.
const epochs = (r: { owner: string; type: number }) => signatureWindow(now, r.owner, r.type);
const rows: Record<string, unknown>[] = [];
/** The signer's own records (what the built-in server keeps as a zone's DNSSEC material). */
const SIGNER_TYPES = new Set([46, 47, 50, 48, 51]);

for (const algorithm of values.algorithms.split(',').map(Number) as DnssecAlgorithm[]) {
  const key = generateDnssecKey(algorithm);
  for (const denial of [{ kind: 'NSEC' as const }, { kind: 'NSEC3' as const, params: NSEC3_RFC9276 }]) {
    const keys = { keySigning: [key], zoneSigning: [key] };
    const reuse = new SignatureReuse();
    const t0 = performance.now();
    const records = signZone(toSign, keys, epochs, denial, reuse);
    const ms = performance.now() - t0;
    const signatures = records.filter((r) => r.type === 46).length;
    // One RRset changed and a new serial: signed again with the previous signatures at hand.
    const at = Math.floor(zone.rrsets.length / 3);
    const changed = zone.rrsets.map((r, i) => (i === at ? { ...r, ttl: r.ttl + 1 } : r));
    const changedZone = { ...toSign, soa: { ...toSign.soa, serial: 2 }, rrsets: changed };
    const t1 = performance.now();
    signZone(changedZone, keys, epochs, denial, reuse);
    const changeMs = performance.now() - t1;
    const reuseMade = reuse.made - signatures;
    // The incremental signer: the whole zone once, then the same change, then a name added.
    const incremental = new IncrementalSigner(origin, denial);
    const t2 = performance.now();
    incremental.sign(toSign, keys, now);
    const incrementalMs = performance.now() - t2;
    const t3 = performance.now();
    const signedAgain = incremental.sign(changedZone, keys, now);
    const incrementalChangeMs = performance.now() - t3;
    const changeStats = incremental.stats;
    // The signing thread receives the RRsets as structured clones (new objects every time): the
    // signer then compares each RRset by its text rather than by identity.
    const t7 = performance.now();
    const cloned = structuredClone({ ...changedZone, soa: { ...changedZone.soa, serial: 4 } });
    const inputCloneMs = performance.now() - t7;
    const t8 = performance.now();
    incremental.sign(cloned, keys, now);
    const incrementalClonedMs = performance.now() - t8;
    // What stays O(zone) after the signer in the built-in server: the signer's records handed from the
    // signing thread (a structured clone, as postMessage makes) and the signed snapshot built from them.
    const t5 = performance.now();
    const data = {
      denial: denial.kind,
      records: signedAgain
        .filter((r) => SIGNER_TYPES.has(r.type))
        .map((r) => ({ owner: r.owner, ttl: r.ttl, type: r.type, rdata: r.rdata })),
      ...(denial.kind === 'NSEC3' ? { nsec3: denial.params } : {}),
    };
    const cloneOfRecords = structuredClone(data);
    const recordsCloneMs = performance.now() - t5;
    // What the signing thread does instead: the records packed into two transferred buffers.
    const t9 = performance.now();
    const packed = packRecords(data.records);
    const moved = structuredClone(packed, { transfer: [packed.fields.buffer, packed.rdata.buffer] });
    const handOver = { ...cloneOfRecords, records: unpackRecords(moved) };
    const handOverMs = performance.now() - t9;
    const t6 = performance.now();
    new ZoneDnssec(origin, handOver);
    const snapshotMs = performance.now() - t6;
    const added = [...changed, { ...zone.rrsets[at]!, owner: `added-name.${origin}` }];
    const t4 = performance.now();
    incremental.sign({ ...toSign, soa: { ...toSign.soa, serial: 3 }, rrsets: added }, keys, now);
    const incrementalAddMs = performance.now() - t4;
    const addStats = incremental.stats;
    rows.push({
      algorithm,
      denial: denial.kind,
      rrsets: zone.rrsets.length,
      signatures,
      seconds: +(ms / 1000).toFixed(2),
      usPerSignature: +((ms * 1000) / signatures).toFixed(1),
      afterOneChangeSeconds: +(changeMs / 1000).toFixed(2),
      signedAgain: reuseMade,
      incrementalFirstSeconds: +(incrementalMs / 1000).toFixed(2),
      incrementalChangeMs: +incrementalChangeMs.toFixed(1),
      incrementalChangeSigned: changeStats.signed,
      incrementalAddMs: +incrementalAddMs.toFixed(1),
      incrementalAddSigned: addStats.signed,
      incrementalAddDenialChanged: addStats.denialChanged,
      inputCloneMs: +inputCloneMs.toFixed(1),
      incrementalClonedChangeMs: +incrementalClonedMs.toFixed(1),
      recordsCloneMs: +recordsCloneMs.toFixed(1),
      handOverMs: +handOverMs.toFixed(1),
      snapshotMs: +snapshotMs.toFixed(1),
    });
  }
  // One changed RRset: its RRSIG alone (the NSEC of its name is re-signed only when its types change).
  const one = zone.rrsets[Math.floor(zone.rrsets.length / 2)]!;
  const rrset = {
    owner: one.owner,
    type: typeCode(one.type)!,
    ttl: one.ttl,
    rdatas: one.rdata.map(canonicalRdata),
  };
  const n = 2000;
  let t = performance.now();
  for (let i = 0; i < n; i++) signRRset(rrset, key, origin, window);
  const oneChange = ((performance.now() - t) * 1000) / n;
  // OpenSSL's randomized signing of the same octets, for scale (not deterministic: not usable, ADR 0021).
  const data = signedData(
    {
      typeCovered: rrset.type,
      algorithm,
      labels: 3,
      originalTtl: rrset.ttl,
      expiration: window.expiration,
      inception: window.inception,
      keyTag: 1,
      signerName: origin,
    },
    rrset,
  );
  const privateKey = privateKeyObject(key);
  t = performance.now();
  for (let i = 0; i < n; i++)
    nodeSign(algorithm === 15 ? null : algorithm === 13 ? 'sha256' : 'sha384', data, {
      key: privateKey,
      dsaEncoding: 'ieee-p1363',
    });
  const openssl = ((performance.now() - t) * 1000) / n;
  rows.push({ algorithm, oneChangeUs: +oneChange.toFixed(1), opensslRandomizedUs: +openssl.toFixed(1) });
}
if (values.json) console.log(JSON.stringify(rows, null, 2));
else
  for (const r of rows)
    console.log(
      Object.entries(r)
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
    );
