/**
 * The homelab API's callers: a request carries no key id, so a caller is known only by the secret that
 * signed it. What an operator's configuration must not allow: two callers one secret (a signature of one
 * would write as the other, into its namespace), an empty secret, a secret that cannot be read.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { SecretRef } from '../../api/secret-ref.ts';
import type { WriteCredential } from '../../writes/credentials.ts';
import { HomelabCallers, SINGLE_CALLER_CREDENTIAL, withSingleCaller } from './callers.ts';

const secrets: Record<string, string> = {
  a: 'secret-of-a',
  b: 'secret-of-b',
  same: 'secret-of-a',
  empty: '',
};
const resolve = async (ref: SecretRef): Promise<string> => {
  const v = ref.env === undefined ? undefined : secrets[ref.env];
  if (v === undefined) throw new Error(`no secret ${String(ref.env)}`);
  return v;
};
const hmac = (name: string, namespace: string, env: string): WriteCredential => ({
  name,
  kind: 'webhook-hmac',
  namespace,
  secretRef: { env },
});
const quiet = () => {};

describe('homelab API callers', () => {
  test('each caller its own secret and namespace; other kinds of credential are no caller', async () => {
    const callers = await HomelabCallers.open(
      [
        hmac('caller-a', 'team-a', 'a'),
        hmac('caller-b', 'team-b', 'b'),
        { name: 'key', kind: 'api-key', namespace: 'x', secretRef: { env: 'a' } } as WriteCredential,
      ],
      resolve,
      quiet,
    );
    callers.stop();
    assert.deepEqual(
      callers.all().map((c) => [c.credential, c.namespace, c.secret.toString()]),
      [
        ['caller-a', 'team-a', 'secret-of-a'],
        ['caller-b', 'team-b', 'secret-of-b'],
      ],
    );
  });

  test('hostile: two callers with one secret are refused (one could write as the other, into its namespace)', async () => {
    await assert.rejects(
      HomelabCallers.open(
        [hmac('caller-a', 'team-a', 'a'), hmac('caller-b', 'team-b', 'same')],
        resolve,
        quiet,
      ),
      /caller-a and caller-b have the same secret/,
    );
  });

  test('an empty or unreadable secret stops the start, naming the credential; no caller at all too', async () => {
    await assert.rejects(
      HomelabCallers.open([hmac('caller-a', 'team-a', 'empty')], resolve, quiet),
      /credential caller-a: its secret is empty/,
    );
    await assert.rejects(
      HomelabCallers.open([hmac('caller-a', 'team-a', 'missing')], resolve, quiet),
      /credential caller-a: no secret missing/,
    );
    await assert.rejects(HomelabCallers.open([], resolve, quiet), /no caller is configured/);
  });

  test('the one-caller flags cannot take over a credential the write-access table names', () => {
    assert.throws(
      () =>
        withSingleCaller(
          { credentials: [hmac(SINGLE_CALLER_CREDENTIAL, 'team-a', 'a')] },
          { secretFile: '/s', namespace: 'team-b' },
        ),
      /already has a credential named homelab-api/,
    );
  });
});
