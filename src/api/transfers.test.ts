import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { API_VERSION, validateResource } from './index.ts';

const klass = (transfers: object) => ({
  apiVersion: API_VERSION,
  kind: 'DNSZoneClass',
  metadata: { name: 'c' },
  spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'], transfers },
});

function problems(transfers: object): string[] {
  const r = validateResource(klass(transfers));
  return r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`);
}

describe('DNSZoneClass.spec.transfers', () => {
  test('allowFrom takes addresses and networks of either family, and nothing else (CEL isIP/isCIDR twin)', () => {
    assert.deepEqual(problems({ allowFrom: ['192.0.2.53', '192.0.2.0/24', '2001:db8::/32', '::1'] }), []);
    for (const bad of ['999.1.1.1', '192.0.2.0/33', '2001:db8::/129', '1.2.3.4/']) {
      const found = problems({ allowFrom: [bad] });
      assert.ok(
        found.some((p) => p.startsWith('spec.transfers.allowFrom[0]')),
        `${bad}: ${found.join('; ')}`,
      );
    }
  });

  test('a notify tsigKey must be one of tsigKeys; requireTsig needs a key', () => {
    const key = { name: 'transfer-key', algorithm: 'hmac-sha256', secretRef: { file: '/k' } };
    assert.deepEqual(
      problems({ tsigKeys: [key], notify: [{ address: '192.0.2.53:53', tsigKey: 'transfer-key' }] }),
      [],
    );
    assert.match(
      problems({ tsigKeys: [key], notify: [{ address: '192.0.2.53:53', tsigKey: 'other' }] }).join(),
      /every notify tsigKey must name one of tsigKeys/,
    );
    assert.match(problems({ requireTsig: true }).join(), /requireTsig needs at least one key/);
    assert.match(
      problems({ tsigKeys: [{ ...key, secretRef: {} }] }).join(),
      /exactly one of file, env, or name/,
    );
  });
});
