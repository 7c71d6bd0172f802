import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TransfersSpec } from '../../api/dnszoneclass.ts';
import {
  DEFAULT_JOURNAL_SIZE,
  parseNetwork,
  type ResolvedTransfers,
  resolveTransfers,
  TransferPolicy,
} from './transfer-policy.ts';

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

  test('parseNetwork', () => {
    assert.deepEqual(parseNetwork('192.0.2.0/24'), { address: '192.0.2.0', prefix: 24, family: 'ipv4' });
    assert.deepEqual(parseNetwork('2001:db8::/32'), { address: '2001:db8::', prefix: 32, family: 'ipv6' });
    assert.deepEqual(parseNetwork('192.0.2.1'), { address: '192.0.2.1', prefix: undefined, family: 'ipv4' });
    for (const bad of [
      '999.1.1.1',
      '1.2.3.4/33',
      '::1/129',
      '1.2.3.4/',
      '1.2.3.4/8/8',
      ':::',
      '01.2.3.4',
      'host',
    ])
      assert.equal(parseNetwork(bad), undefined, bad);
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

describe('resolveTransfers', () => {
  const secrets = async (ref: { file?: string; env?: string }) =>
    ref.env === 'BAD' ? 'not base64!' : SECRET;

  test('reads secrets by reference; requireTsig defaults to "keys are set"', async () => {
    const spec: TransfersSpec = {
      allowFrom: ['10.0.0.0/8'],
      tsigKeys: [{ name: 'k', algorithm: 'hmac-sha256', secretRef: { file: '/x' } }],
      notify: [{ address: '10.0.0.53:53', tsigKey: 'k' }],
    };
    const r = await resolveTransfers(spec, secrets);
    assert.deepEqual(r, {
      allowFrom: ['10.0.0.0/8'],
      requireTsig: true,
      keys: [{ name: 'k', algorithm: 'hmac-sha256', secret: SECRET }],
      notify: [{ address: '10.0.0.53:53', tsigKey: 'k' }],
      journalSize: DEFAULT_JOURNAL_SIZE,
    });
    assert.equal((await resolveTransfers({ allowFrom: ['10.0.0.1'] }, secrets))?.requireTsig, false);
    assert.equal(await resolveTransfers(undefined, secrets), undefined);
  });

  test('what the schema patterns let through is refused with every problem named', async () => {
    const spec: TransfersSpec = {
      allowFrom: ['127.0.0.1', '999.1.1.1', '10.0.0.0/40'],
      tsigKeys: [{ name: 'k', algorithm: 'hmac-sha256', secretRef: { env: 'BAD' } }],
      notify: [{ address: '127.0.0.1:99999' }, { address: '127.0.0.1:53', tsigKey: 'other' }],
    };
    await assert.rejects(resolveTransfers(spec, secrets), (e: Error) => {
      assert.match(e.message, /allowFrom\[1\] "999\.1\.1\.1" is not an IP address or network/);
      assert.match(e.message, /allowFrom\[2\] "10\.0\.0\.0\/40"/);
      assert.match(e.message, /tsigKeys\[0\]: TSIG key k\.: the secret is not valid base64/);
      assert.match(e.message, /notify\[0\] "127\.0\.0\.1:99999": the port must be 1 to 65535/);
      assert.match(e.message, /notify\[1\] tsigKey "other" is not one of tsigKeys \(k\)/);
      return true;
    });
  });
});
