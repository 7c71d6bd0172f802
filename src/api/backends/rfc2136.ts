/**
 * Settings of the RFC 2136 backend: any primary that accepts DNS UPDATE with TSIG (Knot DNS, BIND),
 * read by AXFR and programmed by UPDATE (docs/backends/rfc2136.md). Pure schema; the adapter is
 * src/backends/rfc2136.
 */
import { type Infer, s } from '../schema.ts';
import { secretRefSchema } from '../secret-ref.ts';

/** A TSIG key name: a domain name, relative or absolute. */
const KEY_NAME_PATTERN =
  '^([A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\\.)*[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\\.?$';

const tsigKeySchema = (description: string) =>
  s.object(
    {
      name: s.string({
        description: 'The key name as the server knows it, e.g. zonekeeper-update.',
        minLength: 1,
        maxLength: 253,
        pattern: KEY_NAME_PATTERN,
        patternMessage: 'is not a valid key name; use a domain name such as "zonekeeper-update"',
      }),
      algorithm: s.string({
        description: 'HMAC algorithm (RFC 8945 §6).',
        enum: ['hmac-sha256', 'hmac-sha384', 'hmac-sha512'] as const,
      }),
      secretRef: {
        ...secretRefSchema,
        description:
          'Where the base64 secret is kept: `file` or `env` in folder mode, a Kubernetes Secret (`namespace`, `name`, `key`) with the operator. Never the secret itself.',
      },
    },
    { description },
  );

export const rfc2136BackendSchema = s.object(
  {
    server: s.string({
      description:
        'Address of the primary that accepts UPDATE and AXFR for the zones: an IP address or a host name, e.g. 192.0.2.53.',
      minLength: 1,
      maxLength: 253,
      pattern: '^([0-9A-Fa-f:.]+|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)$',
      patternMessage: 'is not an IP address or host name; write e.g. "192.0.2.53" or "knot.dns.svc"',
    }),
    port: s.optional(
      s.integer({ description: 'DNS port of the server (TCP). Default: 53.', minimum: 1, maximum: 65535 }),
    ),
    tsigKey: tsigKeySchema(
      'The TSIG key (RFC 8945) every UPDATE is signed with; the server must allow it to update the zones (Knot: an acl with action update; BIND: update-policy or allow-update). Also signs AXFR unless transferKey is set.',
    ),
    transferKey: s.optional(
      tsigKeySchema('The TSIG key AXFR requests are signed with, when not tsigKey. Default: tsigKey.'),
    ),
    resyncSeconds: s.optional(
      s.integer({
        description:
          'How often every zone is read back by AXFR and drift repaired when nothing changed. Default: 300.',
        minimum: 1,
        maximum: 86400,
        format: 'int32',
      }),
    ),
    timeoutSeconds: s.optional(
      s.integer({
        description: 'Time limit of each AXFR and each UPDATE exchange. Default: 10.',
        minimum: 1,
        maximum: 300,
        format: 'int32',
      }),
    ),
  },
  {
    description:
      'Any primary accepting RFC 2136 UPDATE with TSIG (Knot DNS, BIND): each zone read by AXFR, the difference sent as UPDATE guarded by prerequisites; only RRsets listed in the zone’s ownership record (_zonekeeper-owned TXT) are touched; the server keeps its own SOA serial.',
  },
);

export type Rfc2136Settings = Infer<typeof rfc2136BackendSchema>;
