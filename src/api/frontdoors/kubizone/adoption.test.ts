import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  admitsRecord,
  adoptRecord,
  patternMatches,
  placeZone,
  type RecordObject,
  segmentMatches,
  type ZoneObject,
  zoneFqdn,
} from './adoption.ts';
import { recordFrontDoor, zoneFrontDoor } from './index.ts';

function zone(namespace: string, name: string, spec: Partial<ZoneObject['spec']>): ZoneObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name, namespace },
    spec: { domainName: 'example.org.', delegations: [], ...spec },
  };
}

function record(namespace: string, name: string, spec: Partial<RecordObject['spec']>): RecordObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Record',
    metadata: { name, namespace },
    spec: { domainName: 'www.example.org.', type: 'A', rdata: '192.0.2.1', ...spec },
  };
}

describe('kubizone patterns', () => {
  test('segments: equal, or one * standing for any text', () => {
    assert.ok(segmentMatches('dev*', 'dev'));
    assert.ok(segmentMatches('dev*', 'dev-1'));
    assert.ok(segmentMatches('ex*le', 'example'));
    assert.ok(segmentMatches('*ample', 'example'));
    assert.ok(!segmentMatches('dev*', 'de'));
    assert.ok(!segmentMatches('ex*le', 'exle-x'));
  });

  test('patterns match from the right; * leftmost is one or more labels; the apex only by @', () => {
    const o = 'example.org.';
    assert.ok(patternMatches('*', o, 'www.example.org.'));
    assert.ok(patternMatches('*', o, 'a.b.c.example.org.'));
    assert.ok(!patternMatches('*', o, 'example.org.'));
    assert.ok(patternMatches('@', o, 'example.org.'));
    assert.ok(!patternMatches('@', o, 'www.example.org.'));
    assert.ok(patternMatches('*.dev', o, 'www.dev.example.org.'));
    assert.ok(patternMatches('*.dev', o, 'a.b.dev.example.org.'));
    assert.ok(!patternMatches('*.dev', o, 'dev.example.org.'));
    assert.ok(!patternMatches('*.dev', o, 'www.prod.example.org.'));
    assert.ok(patternMatches('dev*', o, 'dev-1.example.org.'));
    assert.ok(!patternMatches('dev*', o, 'www.dev-1.example.org.'));
    assert.ok(!patternMatches('*.*', o, 'www.example.org.'));
    assert.ok(patternMatches('WWW', o, 'www.EXAMPLE.org.'));
    // A pattern never reaches outside the zone.
    assert.ok(!patternMatches('*', o, 'www.example.com.'));
  });

  test('every record needs a delegation; empty namespaces admit every namespace', () => {
    const o = 'example.org.';
    assert.ok(!admitsRecord([], o, 'dns', 'www.example.org.', 'A'));
    assert.ok(admitsRecord([{ records: [{ pattern: '*' }] }], o, 'anyone', 'www.example.org.', 'A'));
    assert.ok(
      !admitsRecord(
        [{ namespaces: ['dns'], records: [{ pattern: '*' }] }],
        o,
        'web',
        'www.example.org.',
        'A',
      ),
    );
    assert.ok(
      !admitsRecord([{ records: [{ pattern: '*', types: ['MX'] }] }], o, 'dns', 'www.example.org.', 'A'),
    );
    assert.ok(
      admitsRecord([{ records: [{ pattern: '*', types: ['mx'] }] }], o, 'dns', 'www.example.org.', 'MX'),
    );
    // A zones-only delegation admits no record.
    assert.ok(!admitsRecord([{ zones: ['*'] }], o, 'dns', 'www.example.org.', 'A'));
  });
});

describe('kubizone adoption', () => {
  const parent = zone('dns', 'example-org', {
    delegations: [{ records: [{ pattern: '*' }] }, { zones: ['sub'] }],
  });
  const sub = zone('dns', 'sub', {
    domainName: 'sub.example.org.',
    delegations: [{ records: [{ pattern: '*', types: ['MX'] }] }],
  });

  test('the longest matching zone adopts; a record it refuses is not passed to a shorter one', () => {
    const a = adoptRecord(record('dns', 'www', { domainName: 'www.sub.example.org.' }), [parent, sub]);
    assert.equal(a.ok, false);
    assert.equal(!a.ok && a.reason, 'NotDelegated');
    const mx = adoptRecord(
      record('dns', 'mx', { domainName: 'www.sub.example.org.', type: 'MX', rdata: '10 mx.' }),
      [parent, sub],
    );
    assert.ok(mx.ok && mx.zone === sub);
    // Without the sub-zone, the parent adopts it.
    const alone = adoptRecord(record('dns', 'www', { domainName: 'www.sub.example.org.' }), [parent]);
    assert.ok(alone.ok && alone.zone === parent);
  });

  test('zoneRef: that zone, if its delegations allow; relative names under its fqdn', () => {
    const a = adoptRecord(record('dns', 'www', { domainName: 'www', zoneRef: { name: 'example-org' } }), [
      parent,
      sub,
    ]);
    assert.ok(a.ok && a.fqdn === 'www.example.org.' && a.zone === parent);
    const other = adoptRecord(record('web', 'www', { domainName: 'www', zoneRef: { name: 'example-org' } }), [
      parent,
    ]);
    assert.equal(other.ok, false, 'zoneRef without a namespace is the record namespace');
    const cross = adoptRecord(
      record('web', 'www', { domainName: 'www', zoneRef: { name: 'example-org', namespace: 'dns' } }),
      [parent],
    );
    assert.ok(cross.ok, 'empty namespaces admit the web namespace');
    const refused = adoptRecord(record('dns', 'www', { domainName: 'x.sub', zoneRef: { name: 'sub' } }), [
      parent,
      sub,
    ]);
    assert.equal(refused.ok, false);
  });

  test('partial zones take the parent fqdn; sub-zones need a zones delegation', () => {
    const lab = zone('lab', 'lab', { domainName: 'lab', zoneRef: { name: 'example-org', namespace: 'dns' } });
    assert.equal(zoneFqdn(lab, [parent, lab]), 'lab.example.org.');
    const placed = placeZone(lab, [parent, lab]);
    assert.equal(placed.ok, false, 'the parent delegates only "sub"');
    const placedSub = placeZone(sub, [parent, sub]);
    assert.ok(placedSub.ok && placedSub.parent?.zone === parent);
    assert.equal(
      zoneFqdn(zone('lab', 'orphan', { domainName: 'x', zoneRef: { name: 'missing' } }), []),
      undefined,
    );
  });

  test('Records of one name and type share one merge key; other names stay apart', () => {
    const parentOnly = [parent];
    const context = {
      zoneName: () => '',
      related: () => parentOnly,
      defaultClass: () => ({ ok: false, code: 'NO_DEFAULT_CLASS', message: '' }) as const,
    };
    const outs = ['192.0.2.1', '192.0.2.2', '192.0.2.1'].map(
      (rdata, i) => recordFrontDoor.translate(record('dns', `r${i}`, { rdata }), context)[0]!,
    );
    assert.equal(new Set(outs.map((o) => o.key)).size, 1);
    // One record each: the store's merge (mergeRecordSets) unions them under that key.
    assert.deepEqual(
      outs.map((o) => (o.spec as { records: string[] }).records),
      [['192.0.2.1'], ['192.0.2.2'], ['192.0.2.1']],
    );
    const other = recordFrontDoor.translate(
      record('dns', 'm', { domainName: 'mail.example.org.' }),
      context,
    )[0]!;
    assert.notEqual(other.key, outs[0]!.key);
  });
});

describe('kubizone Events', () => {
  const ready = (status: 'True' | 'False', reason: string) => ({
    conditions: [{ type: 'Ready', status, reason, message: `because ${reason}`, lastTransitionTime: 't' }],
  });

  test('a refusal is a Warning, being served a Normal; only when Ready changes; Pending is quiet', () => {
    assert.deepEqual(recordFrontDoor.event?.(undefined, ready('False', 'NotDelegated')), {
      type: 'Warning',
      reason: 'NotDelegated',
      action: 'Adopt',
      note: 'because NotDelegated',
    });
    assert.equal(
      recordFrontDoor.event?.(ready('False', 'NotDelegated'), ready('False', 'NotDelegated')),
      undefined,
    );
    assert.equal(recordFrontDoor.event?.(undefined, ready('False', 'Pending')), undefined);
    assert.equal(
      recordFrontDoor.event?.(ready('False', 'Pending'), ready('True', 'Served'))?.reason,
      'Served',
    );
    assert.equal(recordFrontDoor.event?.(ready('True', 'Served'), ready('True', 'Served')), undefined);
    assert.equal(
      recordFrontDoor.event?.(ready('True', 'Served'), ready('False', 'Conflict'))?.action,
      'Serve',
    );
    assert.equal(zoneFrontDoor.event?.(undefined, ready('False', 'NoDefaultClass'))?.type, 'Warning');
  });
});
