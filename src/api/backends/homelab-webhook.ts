/**
 * Settings of the homelab webhook backend: Zonekeeper-managed zones programmed into any provider that
 * speaks the homelab DNS webhook protocol (docs/backends/homelab-webhook.md). Pure schema; the adapter
 * is src/backends/homelab-webhook.
 */
import { type Infer, s } from '../schema.ts';
import { secretRefSchema } from '../secret-ref.ts';

export const homelabWebhookBackendSchema = s.object(
  {
    url: s.string({
      description:
        'Base URL of the provider (it answers /health and /records), e.g. http://dns-provider.dns.svc:7100.',
      minLength: 1,
      maxLength: 2048,
      pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
      patternMessage:
        'is not an http:// or https:// URL without query or fragment; write e.g. "http://127.0.0.1:7100"',
    }),
    hmacAuth: s.optional(
      s.object(
        {
          secretRef: {
            ...secretRefSchema,
            description:
              'Where the shared HMAC secret is kept: `file` or `env` in folder mode, a Kubernetes Secret (`namespace`, `name`, `key`) with the operator. Never the secret itself.',
          },
          algorithm: s.optional(
            s.string({
              description: 'HMAC algorithm. Default: SHA256.',
              enum: ['SHA256', 'SHA512'] as const,
            }),
          ),
        },
        { description: 'Sign every request (X-DNS-Timestamp, X-DNS-Nonce, X-DNS-Signature).' },
      ),
    ),
    timeoutSeconds: s.optional(
      s.integer({
        description: 'Time limit of each request. Default: 10.',
        minimum: 1,
        maximum: 300,
        format: 'int32',
      }),
    ),
    resyncSeconds: s.optional(
      s.integer({
        description:
          'How often every zone is applied again and drift repaired when nothing changed. Default: 300.',
        minimum: 1,
        maximum: 86400,
        format: 'int32',
      }),
    ),
  },
  {
    description:
      'A provider speaking the homelab DNS webhook protocol: one POST /records per changed RRset, DELETE for removed ones.',
  },
);

export type HomelabWebhookBackendSettings = Infer<typeof homelabWebhookBackendSchema>;
