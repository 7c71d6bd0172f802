import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstN } from '../../../test/support/selection-policies.ts';
import { clientNetwork, networkWithin, parseNetwork, type SelectionQuery } from './policy.ts';
import { SelectionPolicies } from './registry.ts';

const query = (o: Partial<SelectionQuery>): SelectionQuery => ({
  qname: 'www.example.com.',
  qtype: 1,
  zone: 'example.com.',
  client: undefined,
  clientSubnet: undefined,
  ...o,
});

test('clientNetwork: the Client Subnet first, else the whole transport address', () => {
  assert.deepEqual(clientNetwork(query({ client: '192.0.2.7' })), {
    family: 1,
    address: Uint8Array.from([192, 0, 2, 7]),
    prefix: 32,
  });
  assert.deepEqual(clientNetwork(query({ client: '::ffff:192.0.2.7' }))?.family, 1);
  const v6 = clientNetwork(query({ client: '2001:db8::1:2' }));
  assert.deepEqual([...(v6?.address ?? [])], [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2]);
  assert.equal(v6?.prefix, 128);
  const subnet = clientNetwork(
    query({
      client: '192.0.2.7',
      clientSubnet: { family: 1, sourcePrefix: 20, scopePrefix: 0, address: Uint8Array.from([198, 51, 96]) },
    }),
  );
  assert.deepEqual(subnet, { family: 1, address: Uint8Array.from([198, 51, 96, 0]), prefix: 20 });
  assert.equal(clientNetwork(query({})), undefined);
});

test('networkWithin and parseNetwork compare prefixes bit by bit', () => {
  const net = (t: string) => parseNetwork(t)!;
  assert.deepEqual(net('192.0.2.77/24').address, Uint8Array.from([192, 0, 2, 0]), 'host bits cleared');
  assert.ok(networkWithin(net('198.51.100.0/24'), net('198.51.96.0/20')));
  assert.ok(!networkWithin(net('198.51.112.0/24'), net('198.51.96.0/20')));
  assert.ok(!networkWithin(net('198.51.96.0/19'), net('198.51.96.0/20')), 'a wider network is not within');
  assert.ok(networkWithin(net('2001:db8:1::/48'), net('2001:db8::/32')));
  assert.ok(!networkWithin(net('2001:db9::/48'), net('2001:db8::/32')));
  assert.ok(!networkWithin(net('10.0.0.0/8'), net('::/0')), 'families differ');
  assert.ok(networkWithin(net('10.0.0.0/8'), net('0.0.0.0/0')));
  for (const bad of ['10.0.0.0', '10.0.0.0/33', '10.0.0/8', 'x/1', '2001:db8::/129', '10.0.0.0/+8']) {
    assert.equal(parseNetwork(bad), undefined, bad);
  }
});

test('the registry refuses duplicate and malformed policy names', () => {
  const registry = new SelectionPolicies([firstN]);
  assert.equal(registry.get('first-n'), firstN);
  assert.throws(() => registry.register(firstN), { code: 'SELECTION_POLICY_DUPLICATE' });
  assert.throws(() => registry.register({ ...firstN, name: 'First N' }), { code: 'SELECTION_POLICY_NAME' });
  assert.deepEqual(registry.names(), ['first-n']);
});
