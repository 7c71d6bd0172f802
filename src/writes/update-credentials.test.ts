import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CredentialTable } from './credentials.ts';
import { updateCredentialName, withUpdateCredentials } from './update-credentials.ts';

describe('update credentials', () => {
  test('one credential per key and namespace, a label value, the key name case- and dot-insensitive', () => {
    const a = updateCredentialName('dns', 'Acme-Key.');
    assert.equal(a, updateCredentialName('dns', 'acme-key'));
    assert.notEqual(a, updateCredentialName('other', 'acme-key'));
    assert.match(a, /^tsig-acme-key-[0-9a-f]{10}$/);
    const long = updateCredentialName('dns', `${'x'.repeat(60)}.example.com`);
    assert.ok(long.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(long), long);
  });

  test('derived from the zones, for their namespace only; the configured table wins a name', () => {
    const base = new CredentialTable({
      credentials: [{ name: 'api', kind: 'api-key', namespace: 'x', secretRef: { env: 'K' } }],
      defaultQuota: { maxRecordSets: 7 },
    });
    let zones = [{ namespace: 'dns', keys: [{ name: 'acme-key', secretRef: { file: '/k' } }] }];
    const lookup = withUpdateCredentials(base, () => zones);
    const name = updateCredentialName('dns', 'acme-key.');
    assert.deepEqual(lookup.get(name), { name, kind: 'tsig', namespace: 'dns', secretRef: { file: '/k' } });
    assert.equal(lookup.get(updateCredentialName('other', 'acme-key')), undefined);
    assert.equal(lookup.get('api')?.kind, 'api-key');
    assert.equal(lookup.quota('dns').maxRecordSets, 7);
    // A policy that goes away takes its credential with it.
    zones = [];
    assert.equal(lookup.get(name), undefined);
  });
});
