/**
 * `ContentSource` given the zone model's content by name (`PublishedByName`): the overlay of a change
 * reads the changed names and their ancestors there, never the whole content, and is byte for byte
 * the overlay a pass over the whole content makes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prng } from '../../../test/support/prng.ts';
import { recordSet, zone, zoneClass } from '../../../test/support/resources.ts';
import type { DNSRecordSet } from '../../api/index.ts';
import { type Name, parseName } from '../../dns/name.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { ChildDelegation } from '../../zones/assemble.ts';
import type { RRset } from '../../zones/rrset.ts';
import { ZoneModel } from '../../zones/zone-model.ts';
import { ContentSource, ZoneImageBuilder } from './image-builder.ts';
import { addChangedNames, buildOverlay } from './overlay.ts';
import { ImageKind, type ZoneImage } from './zone-image.ts';

const ORIGIN = 'example.com.';
const theZone = zone('dns', 'z', 'example.com');
const theClass = zoneClass('builtin', ['ns1.example.com.', 'ns.elsewhere.net.']);

/** Names that make and end empty non-terminals, wildcards, a delegation with glue and names below it. */
const NAMES = [
  'www',
  'b',
  'a.b',
  'x.a.b',
  'y.x.a.b',
  '*.w',
  'p.*.w',
  'deleg',
  'ns.deleg',
  'c.deleg',
  'kid',
  'ns1.kid',
  'q.r.s.t',
];
const VALUES: Partial<Record<RecordTypeName, string[]>> = {
  A: ['192.0.2.1', '192.0.2.2'],
  TXT: ['hello', 'v=spf1 -all'],
  NS: ['ns.deleg', 'ns.other.net.'],
  CNAME: ['target.example.net.'],
  MX: ['10 mail'],
};
const TYPES = Object.keys(VALUES) as RecordTypeName[];

const child: ChildDelegation = {
  zone: 'team/kid',
  origin: 'kid.example.com.',
  nameServers: ['ns1.kid.example.com.'],
  ttl: 300,
  glue: [
    {
      owner: 'ns1.kid.example.com.',
      type: 'A',
      ttl: 300,
      rdata: [{ type: 'A', address: '192.0.2.53' }],
      origin: { kind: 'glue', namespace: 'team', name: 'ns1' },
    },
  ],
};

/** A content function that counts its calls: with `byName` an overlay must not make any. */
function counted(model: ZoneModel): { content: () => Iterable<RRset>; calls: () => number } {
  let calls = 0;
  return {
    content: () => {
      calls++;
      return model.rrsets();
    },
    calls: () => calls,
  };
}

const bytes = (image: ZoneImage) => new Uint8Array(image.buffer.slice(0)).fill(0, 60, 64);

test('an overlay read from the zone model by name is the one a pass over the content makes, and reads no content', () => {
  const r = prng(0x5e_c0_de);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const model = new ZoneModel(theZone, theClass, ORIGIN);
  const current = new Map<string, DNSRecordSet>();
  const randomRecordSet = (id: number): DNSRecordSet => {
    const type = pick(TYPES);
    const values = VALUES[type]!;
    return recordSet('dns', `rs${id}`, {
      zoneRef: { name: 'z' },
      name: pick(NAMES),
      type,
      records: type === 'CNAME' ? values.slice(0, 1) : values.slice(0, 1 + Math.floor(r() * values.length)),
    });
  };
  // Many names besides, so that a pass over the content would be seen.
  for (let i = 0; i < 300; i++) {
    const rs = recordSet('dns', `bulk${i}`, {
      zoneRef: { name: 'z' },
      name: `h${i}.bulk`,
      type: 'A',
      records: [`198.51.100.${i % 250}`],
    });
    current.set(`dns/bulk${i}`, rs);
  }
  const at = (key: string) => {
    const rs = current.get(key);
    return rs ? { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) as Name } : undefined;
  };
  model.update(
    [...current.keys()].map((key) => ({ key, current: at(key) })),
    [],
    true,
  );
  const builder = new ZoneImageBuilder();
  const base = builder.current(new ContentSource(ORIGIN, model.soa, 1, () => model.rrsets())).image;
  const changed = new Map<string, Name>();
  let children: ChildDelegation[] = [];
  let overlays = 0;
  for (let step = 0; step < 400; step++) {
    const keys: string[] = [];
    const op = r();
    if (op < 0.5) {
      const rs = randomRecordSet(Math.floor(r() * 30));
      current.set(`dns/${rs.metadata.name}`, rs);
      keys.push(`dns/${rs.metadata.name}`);
    } else if (op < 0.9) {
      const key = pick([...current.keys()].filter((k) => !k.startsWith('dns/bulk')));
      if (key !== undefined) {
        current.delete(key);
        keys.push(key);
      }
    } else children = children.length === 0 ? [child] : [];
    const delta = model.update(
      keys.map((key) => ({ key, current: at(key) })),
      children,
    );
    const serial = step + 2;
    const owners = [...delta.upserts, ...delta.deletes].map((d) => d.owner);
    addChangedNames(changed, owners, ORIGIN);
    const context = `step ${step}`;
    const byName = counted(model);
    const viaNames = buildOverlay(
      new ContentSource(ORIGIN, model.soa, serial, byName.content, model),
      base,
      changed,
    );
    assert.equal(byName.calls(), 0, `${context}: the content was read`);
    const viaPass = buildOverlay(
      new ContentSource(ORIGIN, model.soa, serial, () => model.rrsets()),
      base,
      changed,
    );
    assert.equal(viaNames.kind, ImageKind.Overlay);
    assert.deepEqual(bytes(viaNames), bytes(viaPass), context);
    // And through the builder, as the DNS threads' pool uses it.
    const overlay = builder.change(
      new ContentSource(ORIGIN, model.soa, serial, byName.content, model),
      serial - 1,
      owners,
    );
    assert.equal(byName.calls(), 0, `${context}: the builder read the content`);
    assert.ok(overlay, context);
    assert.deepEqual(bytes(overlay), bytes(viaPass), `${context}: through the builder`);
    overlays++;
  }
  assert.equal(overlays, 400);
});
