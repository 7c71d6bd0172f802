/**
 * The cost of the content hash (ADR 0012): a zone of `--names` owner names with one A record each,
 * loaded into a ZoneModel; then the kept-digest hash (`ZoneModel.contentHash`), the from-scratch
 * reference (`zoneContentHash` over the assembled zone), and one changed record followed by a new hash.
 *
 *   npx node bench/content-hash.ts [--names 100000]
 */
import { parseArgs } from 'node:util';
import { zoneContentHash } from '../src/zones/content-hash.ts';
import { ZoneModel } from '../src/zones/zone-model.ts';
import { recordSet, zone, zoneClass } from '../test/support/resources.ts';

const { values } = parseArgs({ options: { names: { type: 'string', default: '100000' } } });
const names = Number(values.names);
const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const record = (i: number, value: string) => ({
  key: `dns/r${i}`,
  current: {
    recordSet: recordSet('dns', `r${i}`, { name: `h${i}`, type: 'A', records: [value] }),
    fqdn: `h${i}.example.com.`,
  },
});
const model = new ZoneModel(
  zone('dns', 'z', 'example.com'),
  zoneClass('builtin', ['ns1.example.com.']),
  'example.com.',
);
const time = <T>(what: string, f: () => T): T => {
  const started = performance.now();
  const out = f();
  console.log(`${what}: ${(performance.now() - started).toFixed(1)} ms`);
  return out;
};
time(`load ${names} names`, () =>
  model.update(
    Array.from({ length: names }, (_, i) => record(i, address(i))),
    [],
    true,
  ),
);
const kept = time('contentHash() from kept digests', () => model.contentHash());
const reference = time('zoneContentHash() from scratch', () => {
  const a = model.assembled();
  return zoneContentHash(a.soa, a.rrsets);
});
if (kept !== reference) throw new Error('the kept-digest hash differs from the reference');
time('one changed record, then contentHash()', () => {
  model.update([record(5, '192.0.2.1')], []);
  return model.contentHash();
});
