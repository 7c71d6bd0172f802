/**
 * Settings of the ExternalDNS webhook backend: Zonekeeper-managed zones programmed through any
 * provider speaking ExternalDNS's webhook protocol (docs/backends/externaldns-webhook.md). Pure schema;
 * the adapter is src/backends/externaldns-webhook.
 */
import { type Infer, s } from '../schema.ts';

/** Prefix and suffix of ExternalDNS's TXT registry names: labels, dashes and `%{record_type}`. */
const AFFIX_PATTERN = '^([a-zA-Z0-9_.-]|%\\{record_type\\})*$';

export const externalDnsWebhookBackendSchema = s.object(
  {
    url: s.string({
      description:
        'Base URL of the webhook provider (it answers GET / and /records), e.g. http://127.0.0.1:8888 for a provider sidecar.',
      minLength: 1,
      maxLength: 2048,
      pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
      patternMessage:
        'is not an http:// or https:// URL without query or fragment; write e.g. "http://127.0.0.1:8888"',
    }),
    timeoutSeconds: s.optional(
      s.integer({
        description: 'Time limit of each request. Default: 10.',
        minimum: 1,
        maximum: 300,
        format: 'int32',
      }),
    ),
    ownerId: s.optional(
      s.string({
        description:
          "Owner ID of Zonekeeper's records in ExternalDNS's TXT registry (what ExternalDNS calls --txt-owner-id); it must differ from every ExternalDNS instance writing to the same provider. Default: zonekeeper.",
        minLength: 1,
        maxLength: 63,
        pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$',
        patternMessage:
          'is not an owner ID: letters, digits, ".", "_" and "-", starting with a letter or digit',
      }),
    ),
    txtPrefix: s.optional(
      s.string({
        description:
          'Prefix of the TXT registry record names, as ExternalDNS --txt-prefix (may hold %{record_type}). Must match the ExternalDNS instances sharing the provider. Default: none.',
        maxLength: 63,
        pattern: AFFIX_PATTERN,
        patternMessage: 'may hold only letters, digits, ".", "_", "-" and %{record_type}',
      }),
    ),
    txtSuffix: s.optional(
      s.string({
        description:
          'Suffix of the TXT registry record names, as ExternalDNS --txt-suffix (may hold %{record_type}); not together with txtPrefix. Default: none.',
        maxLength: 63,
        pattern: AFFIX_PATTERN,
        patternMessage: 'may hold only letters, digits, ".", "_", "-" and %{record_type}',
      }),
    ),
    txtWildcardReplacement: s.optional(
      s.string({
        description:
          'What replaces a leading * in TXT registry record names, as ExternalDNS --txt-wildcard-replacement. Default: none.',
        maxLength: 63,
        pattern: '^[a-zA-Z0-9_-]*$',
        patternMessage: 'may hold only letters, digits, "_" and "-"',
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
      "A provider speaking ExternalDNS's webhook protocol: record sets as endpoints, one POST /records per apply, ownership in ExternalDNS's TXT registry.",
  },
);

export type ExternalDnsWebhookBackendSettings = Infer<typeof externalDnsWebhookBackendSchema>;
