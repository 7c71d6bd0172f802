import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Domain } from '../../api/index.ts';
import { eventFor } from './events.ts';

function domain(verified?: { status: 'True' | 'False'; reason: string }): Domain {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'Domain',
    metadata: { name: 'example-com', namespace: 'team-a', generation: 1 },
    spec: { domainName: 'example.com' },
    ...(verified
      ? {
          status: {
            conditions: [
              { type: 'Verified', ...verified, message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z' },
            ],
          },
        }
      : {}),
  };
}

describe('Domain events', () => {
  test('a lost verification is a Warning, never silent', () => {
    const e = eventFor(
      domain({ status: 'True', reason: 'Verified' }),
      domain({ status: 'False', reason: 'NotVerified' }),
    );
    assert.equal(e?.type, 'Warning');
    assert.equal(e?.reason, 'VerificationLost');
    assert.equal(e?.regarding.kind, 'Domain');
  });

  test('verification is a Normal event; a refused claim a Warning; nothing new, nothing', () => {
    assert.equal(eventFor(domain(), domain({ status: 'True', reason: 'Verified' }))?.reason, 'Verified');
    assert.equal(
      eventFor(domain(), domain({ status: 'False', reason: 'ClaimedByOtherNamespace' }))?.reason,
      'ClaimedByOtherNamespace',
    );
    assert.equal(
      eventFor(domain(), domain({ status: 'False', reason: 'NotVerified' })),
      undefined,
      'still trying',
    );
    const same = domain({ status: 'True', reason: 'Verified' });
    assert.equal(eventFor(same, same), undefined);
  });

  test('an expiring registration is a Warning, once', () => {
    const withExpiry = (status: 'True' | 'False'): Domain => ({
      ...domain(),
      status: {
        conditions: [
          {
            type: 'RegistrationExpiring',
            status,
            reason: status === 'True' ? 'ExpiresSoon' : 'NotExpiring',
            message: 'the registration expires on 2026-12-01T00:00:00Z (in 5 days); renew it',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
      },
    });
    const e = eventFor(withExpiry('False'), withExpiry('True'));
    assert.equal(e?.type, 'Warning');
    assert.equal(e?.reason, 'RegistrationExpiring');
    assert.equal(eventFor(withExpiry('True'), withExpiry('True')), undefined);
  });
});
