/**
 * Settings of the PowerDNS backend: PowerDNS Authoritative programmed through its HTTP API
 * (docs/backends/powerdns.md). Pure schema; the adapter is src/backends/powerdns.
 */
import { type Infer, s } from '../schema.ts';
import { secretRefSchema } from '../secret-ref.ts';

export const powerDnsBackendSchema = s.object(
  {
    url: s.string({
      description:
        'Base URL of the PowerDNS webserver (api=yes, webserver=yes), without /api/v1, e.g. http://127.0.0.1:8081.',
      minLength: 1,
      maxLength: 2048,
      pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
      patternMessage:
        'is not an http:// or https:// URL without query or fragment; write e.g. "http://127.0.0.1:8081"',
    }),
    serverId: s.optional(
      s.string({
        description:
          'The server_id in API paths. Default: localhost (what PowerDNS Authoritative calls itself).',
        minLength: 1,
        maxLength: 253,
        pattern: '^[A-Za-z0-9._-]+$',
        patternMessage: 'is not a server id; use letters, digits, ".", "_" and "-", e.g. "localhost"',
      }),
    ),
    apiKeySecretRef: {
      ...secretRefSchema,
      description:
        'Where the API key (api-key in pdns.conf) is kept: `file` or `env` in folder mode, a Kubernetes Secret (`namespace`, `name`, `key`) with the operator. Never the key itself.',
    },
    zoneKind: s.optional(
      s.string({
        description:
          'Kind of the zones Zonekeeper creates: Native (replicated by the database, e.g. LightningStream) or Master (PowerDNS sends NOTIFY and serves transfers). Default: Native.',
        enum: ['Native', 'Master'] as const,
      }),
    ),
    tls: s.optional(
      s.object(
        {
          caFile: s.optional(
            s.string({
              description: 'A PEM file of the CA that signed the webserver certificate.',
              minLength: 1,
              maxLength: 4096,
            }),
          ),
          serverName: s.optional(
            s.string({
              description: 'The name to verify the certificate against, when not the URL host.',
              minLength: 1,
              maxLength: 253,
            }),
          ),
          insecureSkipVerify: s.optional(
            s.boolean({ description: 'Do not verify the certificate (tests only). Default: false.' }),
          ),
        },
        { description: 'TLS settings for an https:// URL (e.g. PowerDNS behind a TLS proxy).' },
      ),
    ),
    luaRecords: s.optional(
      s.boolean({
        description:
          'Program steered record sets (healthCheck, selection, placement) as LUA records, which PowerDNS evaluates ' +
          "per query with its own health checks. PowerDNS must run with enable-lua-records=yes or have the zone's " +
          'ENABLE-LUA-RECORDS metadata set to 1 (tried through the API, set by hand when the API refuses it); a PowerDNS that ' +
          'does not evaluate them is reported and gets every candidate instead. Default: false (every candidate, ' +
          'unsteered).',
      }),
    ),
    resyncSeconds: s.optional(
      s.integer({
        description:
          'How often every zone is read back from PowerDNS and drift repaired when nothing changed. Default: 300.',
        minimum: 1,
        maximum: 86400,
        format: 'int32',
      }),
    ),
    timeoutSeconds: s.optional(
      s.integer({
        description: 'Time limit of each API request. Default: 10.',
        minimum: 1,
        maximum: 300,
        format: 'int32',
      }),
    ),
  },
  {
    description:
      'PowerDNS Authoritative, programmed through its HTTP API: one PATCH per zone change, only RRsets Zonekeeper owns touched, drift repaired on every read-back.',
  },
);

export type PowerDnsSettings = Infer<typeof powerDnsBackendSchema>;
