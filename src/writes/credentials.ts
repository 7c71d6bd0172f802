/**
 * Who may write through an API, and where: each credential maps to one namespace, so the record sets
 * it writes are that namespace's and the zones' delegations and the conflict rules apply to them as to
 * the namespace's own DNSRecordSets. A credential holds its secret by reference only (a file, an
 * environment variable or a Kubernetes Secret key), never inline.
 */
import { DNS1123_LABEL } from '../api/meta.ts';
import { validateValue } from '../api/schema.ts';
import { type SecretRef, secretRefSchema } from '../api/secret-ref.ts';
import { DEFAULT_QUOTA, type NamespaceQuota } from './write-request.ts';

/**
 * How a front door authenticates the credential's secret. `externaldns-webhook` is not configured in
 * the file: `--externaldns-webhook-namespace` defines it, and it has no secret (the ExternalDNS webhook
 * protocol authenticates nobody; whoever reaches its listener writes as it).
 */
export type CredentialKind = 'api-key' | 'tsig' | 'webhook-hmac' | 'externaldns-webhook';
export const CREDENTIAL_KINDS: readonly CredentialKind[] = ['api-key', 'tsig', 'webhook-hmac'];

export interface WriteCredential {
  /**
   * The credential's name: an API key's id, a TSIG key name (RFC 8945 §4.2), a webhook's name. It is
   * the value of the written-by label on what it writes, so it is a Kubernetes label value.
   */
  name: string;
  kind: CredentialKind;
  /** The namespace its record sets belong to. */
  namespace: string;
  /** The secret (API key, TSIG key, HMAC secret): by reference only; none for `externaldns-webhook`. */
  secretRef?: SecretRef;
}

/** Where credentials and per-namespace quotas are configured (folder mode: a file; a cluster: the chart). */
export interface WriteAccessConfig {
  credentials: WriteCredential[];
  /** Quotas by namespace; namespaces not listed get `defaultQuota`. */
  quotas?: Record<string, Partial<NamespaceQuota>>;
  defaultQuota?: Partial<NamespaceQuota>;
}

/** A label value: at most 63 characters, alphanumerics with "-", "_" and "." inside. */
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const NAMESPACE = new RegExp(DNS1123_LABEL);
/** Fields that would hold a secret inline: refused, so a secret never sits in configuration. */
const INLINE_SECRET_FIELDS = ['secret', 'key', 'value', 'password', 'token', 'apiKey'];

export interface CredentialProblem {
  path: string;
  code: string;
  message: string;
}

/** Checks a credential table; every problem says what to fix. */
export function validateWriteAccess(
  config: unknown,
): { ok: true; config: WriteAccessConfig } | { ok: false; problems: CredentialProblem[] } {
  const problems: CredentialProblem[] = [];
  const fail = (path: string, code: string, message: string) => problems.push({ path, code, message });
  if (!isObject(config) || !Array.isArray(config.credentials)) {
    fail('credentials', 'INVALID_TYPE', 'expected a mapping with a credentials list');
    return { ok: false, problems };
  }
  const names = new Map<string, number>();
  const credentials: WriteCredential[] = [];
  for (const [i, c] of config.credentials.entries()) {
    const at = `credentials[${i}]`;
    if (!isObject(c)) {
      fail(at, 'INVALID_TYPE', 'expected a mapping with name, kind, namespace and secretRef');
      continue;
    }
    for (const field of INLINE_SECRET_FIELDS) {
      if (field in c)
        fail(
          `${at}.${field}`,
          'INLINE_SECRET',
          `a credential never holds its secret inline; remove ${field} and give secretRef (file, env, or a Kubernetes Secret name and key)`,
        );
    }
    for (const field of Object.keys(c))
      if (!['name', 'kind', 'namespace', 'secretRef', ...INLINE_SECRET_FIELDS].includes(field))
        fail(
          `${at}.${field}`,
          'UNKNOWN_FIELD',
          `unknown field ${field}; a credential has name, kind, namespace and secretRef`,
        );
    const { name, kind, namespace, secretRef } = c;
    if (typeof name !== 'string' || !LABEL_VALUE.test(name))
      fail(
        `${at}.name`,
        'INVALID_NAME',
        'the name must be a Kubernetes label value (1-63 letters, digits, "-", "_", "." starting and ending alphanumeric): it labels what the credential writes',
      );
    else if (names.has(name.toLowerCase()))
      fail(
        `${at}.name`,
        'DUPLICATE_NAME',
        `credential ${name} is already defined at credentials[${names.get(name.toLowerCase())}]`,
      );
    else names.set(name.toLowerCase(), i);
    if (typeof kind !== 'string' || !CREDENTIAL_KINDS.includes(kind as CredentialKind))
      fail(`${at}.kind`, 'INVALID_KIND', `kind must be one of ${CREDENTIAL_KINDS.join(', ')}`);
    if (typeof namespace !== 'string' || namespace.length > 63 || !NAMESPACE.test(namespace))
      fail(
        `${at}.namespace`,
        'INVALID_NAMESPACE',
        'namespace must be a DNS-1123 label (the namespace the credential writes to)',
      );
    const refProblems = validateValue(secretRefSchema, secretRef, `${at}.secretRef`);
    if (secretRef === undefined)
      fail(`${at}.secretRef`, 'REQUIRED', 'secretRef is required: where the secret is kept');
    else for (const p of refProblems) fail(p.path, p.code ?? 'INVALID', p.message);
    if (problems.length === 0)
      credentials.push({
        name: name as string,
        kind: kind as CredentialKind,
        namespace: namespace as string,
        secretRef: secretRef as SecretRef,
      });
  }
  const quota = (value: unknown, path: string): Partial<NamespaceQuota> | undefined => {
    if (value === undefined) return undefined;
    if (!isObject(value)) {
      fail(path, 'INVALID_TYPE', 'expected a mapping with maxRecordSets, requestsPerSecond and burst');
      return undefined;
    }
    const out: Partial<NamespaceQuota> = {};
    for (const [field, v] of Object.entries(value)) {
      if (!['maxRecordSets', 'requestsPerSecond', 'burst'].includes(field)) {
        fail(
          `${path}.${field}`,
          'UNKNOWN_FIELD',
          `unknown field ${field}; a quota has maxRecordSets, requestsPerSecond and burst`,
        );
        continue;
      }
      if (
        typeof v !== 'number' ||
        !Number.isFinite(v) ||
        v < 0 ||
        (field !== 'requestsPerSecond' && !Number.isInteger(v))
      )
        fail(
          `${path}.${field}`,
          'INVALID_VALUE',
          `${field} must be a non-negative ${field === 'requestsPerSecond' ? 'number' : 'integer'}`,
        );
      else out[field as keyof NamespaceQuota] = v;
    }
    return out;
  };
  const defaultQuota = quota(config.defaultQuota, 'defaultQuota');
  const quotas: Record<string, Partial<NamespaceQuota>> = {};
  if (config.quotas !== undefined) {
    if (!isObject(config.quotas)) fail('quotas', 'INVALID_TYPE', 'expected a mapping of namespace to quota');
    else
      for (const [ns, q] of Object.entries(config.quotas)) {
        const parsed = quota(q, `quotas.${ns}`);
        if (parsed) quotas[ns] = parsed;
      }
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    config: { credentials, quotas, ...(defaultQuota ? { defaultQuota } : {}) },
  };
}

/** Credentials by name and the quota of each namespace. */
export class CredentialTable {
  private readonly byName = new Map<string, WriteCredential>();
  private readonly config: WriteAccessConfig;

  constructor(config: WriteAccessConfig) {
    this.config = config;
    for (const c of config.credentials) this.byName.set(c.name, c);
  }

  get(name: string): WriteCredential | undefined {
    return this.byName.get(name);
  }

  quota(namespace: string): NamespaceQuota {
    return { ...DEFAULT_QUOTA, ...this.config.defaultQuota, ...this.config.quotas?.[namespace] };
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
