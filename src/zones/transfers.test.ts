import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TransfersSpec } from '../api/dnszoneclass.ts';
import {
  DEFAULT_JOURNAL_SIZE,
  highestSerial,
  parseNetwork,
  resolveTransfers,
  transfersProblems,
  withUpdatePolicy,
} from './transfers.ts';

const SECRET = Buffer.alloc(32, 7).toString('base64');

describe('parseNetwork', () => {
  test('addresses and networks of either family; anything else is undefined', () => {
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

describe('highestSerial', () => {
  test('the highest answered serial in RFC 1982 order, across the wrap; none when nobody answered', () => {
    assert.equal(
      highestSerial([
        { target: 'a', serial: 5 },
        { target: 'b', serial: 7 },
      ]),
      7,
    );
    assert.equal(
      highestSerial([
        { target: 'a', serial: 0xfffffff0 },
        { target: 'b', serial: 3 },
      ]),
      3,
    );
    assert.equal(
      highestSerial([
        { target: 'a', error: 'timeout' },
        { target: 'b', serial: 9 },
      ]),
      9,
    );
    assert.equal(highestSerial([{ target: 'a', error: 'timeout' }]), undefined);
  });
});

describe('withUpdatePolicy', () => {
  const base = {
    allowFrom: [],
    requireTsig: true,
    keys: [
      { name: 'xfr', algorithm: 'hmac-sha256', secret: 'AAAA' },
      { name: 'upd', algorithm: 'hmac-sha256', secret: 'AAAA', usage: ['update' as const] },
    ],
    notify: [],
    journalSize: 10,
  };
  const zone = (updatePolicy?: { key: string; names: string[]; types: 'A'[] }[]) => ({
    metadata: { name: 'z', namespace: 'dns' },
    spec: { domainName: 'example.com', className: 'c', ...(updatePolicy ? { updatePolicy } : {}) },
  });

  test('adds the rules of update keys and the zone namespace; reports the others', () => {
    const r = withUpdatePolicy(
      base,
      zone([
        { key: 'UPD.', names: ['*'], types: ['A'] },
        { key: 'xfr', names: ['*'], types: ['A'] },
        { key: 'nope', names: ['*'], types: ['A'] },
      ]),
    );
    assert.deepEqual(r.resolved?.update, {
      namespace: 'dns',
      rules: [{ key: 'UPD.', names: ['*'], types: ['A'] }],
    });
    assert.equal(r.problems.length, 2);
    assert.match(r.problems[0]!, /not an update key; add usage: \[update\]/);
    assert.match(r.problems[1]!, /not one of the class's transfers.tsigKeys/);
  });

  test('no policy changes nothing; a policy without class keys is reported', () => {
    assert.equal(withUpdatePolicy(base, zone()).resolved, base);
    const r = withUpdatePolicy(undefined, zone([{ key: 'upd', names: ['*'], types: ['A'] }]));
    assert.equal(r.resolved, undefined);
    assert.match(r.problems[0]!, /no transfers.tsigKeys/);
  });
});

describe('transfer settings with update keys', () => {
  test('NOTIFY is not signed with an update-only key', () => {
    const problems = transfersProblems({
      allowFrom: [],
      requireTsig: true,
      keys: [{ name: 'upd', algorithm: 'hmac-sha256', secret: SECRET, usage: ['update'] }],
      notify: [{ address: '192.0.2.53:53', tsigKey: 'upd' }],
      journalSize: 10,
    });
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /update-only key/);
  });
});
