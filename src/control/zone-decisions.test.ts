import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { zone } from '../../test/support/resources.ts';
import type { Backend, RRsetProblem } from '../backends/backend.ts';
import { PendingDelta } from '../zones/rrset-delta.ts';
import {
  nextVisit,
  planApply,
  recordStatusesToWrite,
  refusedZoneStatus,
  servedZoneConditions,
  sortProblems,
  withZoneNotes,
  zoneAccepted,
} from './zone-decisions.ts';

const backend = { name: 'test' } as Backend;

function problem(name: string, reason: RRsetProblem['reason'], message: string): RRsetProblem {
  return {
    owner: `${name}.example.com.`,
    type: 'A',
    origin: { kind: 'recordSet', namespace: 'dns', name },
    reason,
    message,
  };
}

describe('zone decisions', () => {
  test('a refused zone keeps the serial and hash it had and says why it is not served', () => {
    const z = {
      ...zone('dns', 'example-com', 'example.com'),
      status: { serial: 7, hash: 'h', conditions: [] },
    };
    const refused = refusedZoneStatus(z, { accepted: false, reason: 'Conflict', message: 'taken' });
    assert.deepEqual(refused.fields, { serial: 7, hash: 'h' });
    assert.deepEqual(
      refused.conditions.map((c) => [c.type, c.status, c.reason, c.message, c.observedGeneration]),
      [
        ['Accepted', 'False', 'Conflict', 'taken', 1],
        ['Programmed', 'False', 'Conflict', 'the zone is not served', 1],
        ['Ready', 'False', 'Conflict', 'taken', 1],
      ],
    );
    const pending = refusedZoneStatus(zone('dns', 'example-com', 'example.com'), undefined);
    assert.deepEqual(pending.fields, {});
    assert.equal(pending.conditions[0]?.reason, 'Pending');
  });

  test('Accepted lists the warnings and why transfers are off', () => {
    assert.equal(zoneAccepted('example.com.', [], undefined, 3).message, 'serving example.com.');
    const c = zoneAccepted('example.com.', ['w1'], 'secret missing', 3);
    assert.equal(c.message, 'accepted with warnings: w1; zone transfers are off: secret missing');
    assert.equal(withZoneNotes(c, []).message, c.message);
    assert.equal(withZoneNotes(c, ['a', 'b']).message, `${c.message}; a; b`);
  });

  test('a delta goes to the backend only from the serial it is known to hold', () => {
    const pending = new PendingDelta();
    const held = { origin: 'example.com.', serial: 10, backend, needsFull: false };
    assert.deepEqual(planApply({ full: true, pending }, held), {}, 'a new model sends the whole zone');
    assert.deepEqual(planApply({ full: false, pending }, undefined), {}, 'nothing held: the whole zone');
    assert.deepEqual(planApply({ full: false, pending }, { ...held, needsFull: true }), {}, 'unknown state');
    pending.add({ upserts: [], deletes: [{ owner: 'x.example.com.', type: 'A' }] });
    assert.deepEqual(planApply({ full: false, pending }, held), {
      delta: { fromSerial: 10, upserts: [], deletes: [{ owner: 'x.example.com.', type: 'A' }] },
    });
  });

  test('problems go to their record sets or the zone; changes since the last apply are found', () => {
    const before = new Map([
      ['dns/a', problem('a', 'BackendRejected', 'bad')],
      ['dns/b', problem('b', 'Conflict', 'held')],
    ]);
    const sorted = sortProblems(
      [
        problem('a', 'BackendRejected', 'bad'),
        problem('c', 'AliasTargetUnresolvable', 'no resolver'),
        {
          owner: 'example.com.',
          type: 'NS',
          origin: { kind: 'apex' },
          reason: 'BackendRejected',
          message: 'no',
        },
      ],
      before,
    );
    assert.deepEqual([...sorted.byRecord.keys()], ['dns/a', 'dns/c']);
    assert.deepEqual(sorted.zoneNotes, ['example.com. NS not programmed: no']);
    assert.deepEqual(
      [...sorted.changed].sort(),
      ['dns/b', 'dns/c'],
      'b went away, c appeared, a is unchanged',
    );
  });

  test('Programmed and Ready follow the read-back', () => {
    const accepted = zoneAccepted('example.com.', [], undefined, 2);
    const served = servedZoneConditions(
      accepted,
      { programmed: true, message: 'test serves 5' },
      'example.com.',
      5,
      2,
    );
    assert.deepEqual(
      served.map((c) => [c.type, c.status, c.message]),
      [
        ['Accepted', 'True', 'serving example.com.'],
        ['Programmed', 'True', 'test serves 5'],
        ['Ready', 'True', 'serving example.com. at serial 5'],
      ],
    );
    const pending = servedZoneConditions(
      accepted,
      { programmed: false, message: 'serves 4' },
      'example.com.',
      5,
      2,
    );
    assert.deepEqual(
      pending.slice(1).map((c) => [c.status, c.reason, c.message]),
      [
        ['False', 'Pending', 'serves 4'],
        ['False', 'Pending', 'serves 4'],
      ],
    );
  });

  test('record statuses: all after a rebuild or a flip of the zone, else only the changed ones', () => {
    const verdicts = new Map([
      ['dns/a', { accepted: true as const, fqdn: 'a.example.com.' }],
      ['dns/b', { accepted: true as const, fqdn: 'b.example.com.' }],
    ]);
    const model = { verdicts };
    const changed = new Set(['dns/p']);
    const all = recordStatusesToWrite({ statusesPending: 'all', programmedOk: true, model }, true, changed);
    assert.deepEqual([...all], ['dns/a', 'dns/b'], 'after a rebuild');
    const some = recordStatusesToWrite(
      { statusesPending: new Set(['dns/s']), programmedOk: true, model },
      true,
      changed,
    );
    assert.deepEqual([...some], ['dns/s', 'dns/p']);
    const flipped = recordStatusesToWrite(
      { statusesPending: new Set(['dns/s']), programmedOk: false, model },
      true,
      changed,
    );
    assert.deepEqual([...flipped], ['dns/a', 'dns/b'], 'the zone became served: every record set');
  });

  test('when the zone is visited again', () => {
    const base = { hashDelayMs: 1000, resyncMs: undefined };
    assert.deepEqual(nextVisit({ ...base, programmed: false, hashSaved: true }), { requeueAfterMs: 1000 });
    assert.deepEqual(nextVisit({ ...base, programmed: true, hashSaved: false }), { requeueAfterMs: 1000 });
    assert.deepEqual(nextVisit({ ...base, programmed: true, hashSaved: false, resyncMs: 200 }), {
      requeueAfterMs: 200,
    });
    assert.deepEqual(nextVisit({ ...base, programmed: true, hashSaved: true, resyncMs: 60_000 }), {
      requeueAfterMs: 60_000,
    });
    assert.equal(nextVisit({ ...base, programmed: true, hashSaved: true }), undefined);
  });
});
