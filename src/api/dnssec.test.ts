import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  disablingDnssec,
  effectiveDnssec,
  parseParentDsAnnotation,
  signingId,
  stillDisabling,
  withParentDs,
} from './dnssec.ts';

describe('DNSSEC settings', () => {
  test('kskLifetimeSeconds: the zone over the class, default 0 (never)', () => {
    assert.equal(effectiveDnssec(undefined, { enabled: true })!.kskLifetimeSeconds, 0);
    assert.equal(
      effectiveDnssec({ kskLifetimeSeconds: 100 }, { enabled: true, kskLifetimeSeconds: 7 })!
        .kskLifetimeSeconds,
      7,
    );
    assert.equal(effectiveDnssec({ kskLifetimeSeconds: 100 }, { enabled: true })!.kskLifetimeSeconds, 100);
  });

  test('the parent-ds annotation: DS records and an optional TTL; anything else is not taken', () => {
    assert.deepEqual(parseParentDsAnnotation('12345 13 2 AB cd; ttl=3600'), {
      ds: ['12345 13 2 AB cd'],
      ttl: 3600,
    });
    assert.deepEqual(parseParentDsAnnotation('1 15 2 aa\n2 13 2 bb'), {
      ds: ['1 15 2 aa', '2 13 2 bb'],
      ttl: 86400,
    });
    // Not DS records: ignored, and an annotation holding none is no record of the parent at all.
    for (const junk of ['', 'ttl=5', 'yes', '1 13 2 xyz', '123456 13 2 aa', undefined])
      assert.equal(parseParentDsAnnotation(junk), undefined, String(junk));
    // `none`: the parent is recorded as publishing no DS (turning signing off goes on).
    assert.deepEqual(parseParentDsAnnotation('none'), { ds: [], ttl: 86400 });
    assert.deepEqual(parseParentDsAnnotation(' NONE ; ttl=300'), { ds: [], ttl: 300 });
    // A DS beside `none` wins: the parent is taken to hold it.
    assert.deepEqual(parseParentDsAnnotation('none; 1 13 2 aa'), { ds: ['1 13 2 aa'], ttl: 86400 });
    assert.equal(parseParentDsAnnotation('nonexistent'), undefined);
    const want = effectiveDnssec(undefined, { enabled: true })!;
    assert.equal(withParentDs(want, 'nonsense'), want);
    assert.deepEqual(withParentDs(want, '1 13 2 aa').parentDs, { ds: ['1 13 2 aa'], ttl: 86400 });
  });

  test('turning signing off: the settings it stays signed with, a serial of its own, until Unsigned', () => {
    // Enabled: nothing to turn off.
    assert.equal(disablingDnssec(undefined, { enabled: true }), undefined);
    const off = disablingDnssec({ enabled: true, keys: 'Split' }, { enabled: false, algorithm: 'ED25519' })!;
    assert.equal(off.disable, true);
    assert.equal(off.keys, 'Split');
    assert.equal(off.algorithm, 'ED25519');
    // The delete CDS is another content: another signing id, so a new serial (ADR 0021).
    const on = effectiveDnssec({ enabled: true, keys: 'Split' }, { algorithm: 'ED25519' })!;
    assert.notEqual(signingId(off), signingId(on));
    assert.equal(signingId({ ...off, disable: undefined }), signingId(on));
    // Still disabling while the status has keys and has not reached Unsigned.
    const keys = [{ keyTag: 1, algorithm: 13, role: 'CSK' as const, active: true }];
    const since = '2026-01-01T00:00:00Z';
    assert.equal(stillDisabling(undefined), false, 'never signed');
    assert.equal(stillDisabling({ keys: [] }), false);
    assert.equal(stillDisabling({ keys }), true);
    assert.equal(stillDisabling({ keys, rollover: { kind: 'Disable', phase: 'DsPropagate', since } }), true);
    assert.equal(stillDisabling({ keys, rollover: { kind: 'Disable', phase: 'Unsigned', since } }), false);
    assert.equal(stillDisabling({ keys, rollover: { kind: 'KSK', phase: 'DsChange', since } }), true);
  });
});
