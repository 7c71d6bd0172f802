import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_JOURNAL_SIZE, type ResolvedTransfers } from '../../zones/transfers.ts';
import { TransferPolicy } from './transfer-policy.ts';

const SECRET = Buffer.alloc(32, 7).toString('base64');

function resolved(extra: Partial<ResolvedTransfers> = {}): ResolvedTransfers {
  return {
    allowFrom: [],
    requireTsig: false,
    keys: [],
    notify: [],
    journalSize: DEFAULT_JOURNAL_SIZE,
    ...extra,
  };
}

describe('TransferPolicy ACL', () => {
  test('IPv4 networks match IPv4 sources and IPv4-mapped IPv6 sources (dual-stack sockets)', () => {
    const p = new TransferPolicy(resolved({ allowFrom: ['192.0.2.0/24', '127.0.0.1'] }));
    assert.equal(p.allows('192.0.2.77'), true);
    assert.equal(p.allows('::ffff:192.0.2.77'), true);
    assert.equal(p.allows('::FFFF:192.0.2.77'), true);
    assert.equal(p.allows('127.0.0.1'), true);
    assert.equal(p.allows('::ffff:127.0.0.1'), true);
    assert.equal(p.allows('127.0.0.2'), false, 'a bare address is one host');
    assert.equal(p.allows('192.0.3.1'), false);
    assert.equal(p.allows('::ffff:192.0.3.1'), false);
    assert.equal(p.allows('::1'), false);
  });

  test('IPv6 networks, and IPv4-mapped entries', () => {
    const p = new TransferPolicy(resolved({ allowFrom: ['2001:db8::/32', '::1', '::ffff:198.51.100.7'] }));
    assert.equal(p.allows('2001:db8:1::53'), true);
    assert.equal(p.allows('2001:db9::53'), false);
    assert.equal(p.allows('::1'), true);
    assert.equal(p.allows('198.51.100.7'), true, 'the mapped form of an IPv4 address is that address');
    assert.equal(p.allows('198.51.100.8'), false);
  });

  test('no allowFrom, or an unknown source, allows nothing', () => {
    assert.equal(new TransferPolicy(resolved()).allows('127.0.0.1'), false);
    const p = new TransferPolicy(resolved({ allowFrom: ['0.0.0.0/0', '::/0'] }));
    assert.equal(p.allows('203.0.113.1'), true);
    assert.equal(p.allows('2001:db8::1'), true);
    assert.equal(p.allows(undefined), false, 'a socket whose peer is gone');
  });

  test('an invalid entry that reached the policy anyway allows nothing instead of throwing', () => {
    const p = new TransferPolicy(resolved({ allowFrom: ['999.1.1.1', '10.0.0.0/40', '127.0.0.1/32'] }));
    assert.equal(p.allows('127.0.0.1'), true);
    assert.equal(p.allows('10.0.0.1'), false);
    assert.equal(new TransferPolicy(resolved({ allowFrom: ['::::'] })).allows('::1'), false);
  });

  test('notify targets get their key by name, case and trailing dot aside', () => {
    const p = new TransferPolicy(
      resolved({
        keys: [{ name: 'Transfer-Key', algorithm: 'hmac-sha256', secret: SECRET }],
        notify: [{ address: '192.0.2.53:5353', tsigKey: 'transfer-key.' }, { address: '[2001:db8::53]:53' }],
      }),
    );
    assert.equal(p.notify[0]!.host, '192.0.2.53');
    assert.equal(p.notify[0]!.port, 5353);
    assert.equal(p.notify[0]!.key?.name, 'transfer-key.');
    assert.deepEqual(p.notify[1], { host: '2001:db8::53', port: 53 });
  });
});

describe('TransferPolicy key usage', () => {
  test('keys without usage transfer; update keys sign UPDATE only; both when asked', () => {
    const key = (name: string, usage?: ('transfer' | 'update')[]) => ({
      name,
      algorithm: 'hmac-sha256',
      secret: SECRET,
      ...(usage ? { usage } : {}),
    });
    const p = new TransferPolicy(
      resolved({
        keys: [
          key('old'),
          key('xfr', ['transfer']),
          key('upd', ['update']),
          key('both', ['transfer', 'update']),
        ],
      }),
    );
    const names = (ring: (n: string) => unknown, list: string[]) =>
      list.filter((n) => ring(`${n}.`) !== undefined);
    assert.deepEqual(names(p.keys, ['old', 'xfr', 'upd', 'both']), ['old', 'xfr', 'both']);
    assert.deepEqual(names(p.updateKeys, ['old', 'xfr', 'upd', 'both']), ['upd', 'both']);
    assert.deepEqual(
      p.keyList.map((k) => k.name),
      ['old.', 'xfr.', 'both.'],
    );
  });
});
