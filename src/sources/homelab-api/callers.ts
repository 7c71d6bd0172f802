/**
 * The callers of the homelab DNS API: the write credentials of kind `webhook-hmac`, each with its
 * secret read by reference (a file, an environment variable, or in a cluster a Secret key). The
 * protocol's requests carry no key id, so a request belongs to the caller whose secret signed it; two
 * callers with the same secret could not be told apart and are refused.
 *
 * Secrets are read at start (a missing one stops the process) and re-read every minute, so a rotated
 * file or Secret is taken without a restart; a re-read that fails keeps the last secrets read.
 */
import type { SecretResolver } from '../../api/secret-ref.ts';
import type { HttpConnectionLimits } from '../../util/http-limits.ts';
import type { WriteAccessConfig, WriteCredential } from '../../writes/credentials.ts';

export interface HomelabCaller {
  /** The write credential: what the record writer is called with and labels what it writes. */
  credential: string;
  /** Its namespace (where its record sets are read back from on GET). */
  namespace: string;
  secret: Buffer;
}

/** The credential the one-caller flags (`--homelab-api-secret-file`, `--homelab-api-namespace`) define. */
export const SINGLE_CALLER_CREDENTIAL = 'homelab-api';

/** How often secrets are read again. */
export const SECRET_REFRESH_MS = 60_000;

export class HomelabCallers {
  private current: HomelabCaller[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly credentials: WriteCredential[];
  private readonly resolve: SecretResolver;
  private readonly log: (
    level: 'info' | 'warn' | 'error',
    message: string,
    fields?: Record<string, unknown>,
  ) => void;

  private constructor(credentials: WriteCredential[], resolve: SecretResolver, log: HomelabCallers['log']) {
    this.credentials = credentials;
    this.resolve = resolve;
    this.log = log;
  }

  /** Reads every caller's secret; throws with every problem when one cannot be read. */
  static async open(
    credentials: readonly WriteCredential[],
    resolve: SecretResolver,
    log: HomelabCallers['log'],
  ): Promise<HomelabCallers> {
    const hmac = credentials.filter((c) => c.kind === 'webhook-hmac');
    if (hmac.length === 0)
      throw new Error(
        '--homelab-api: no caller is configured; give --homelab-api-secret-file and --homelab-api-namespace, or credentials of kind webhook-hmac in --write-access',
      );
    const callers = new HomelabCallers(hmac, resolve, log);
    callers.current = await callers.read();
    callers.timer = setInterval(() => {
      callers.read().then(
        (next) => {
          callers.current = next;
        },
        (e: unknown) =>
          callers.log(
            'warn',
            'homelab API: cannot re-read the callers’ secrets; keeping the last ones read',
            {
              error: e instanceof Error ? e.message : String(e),
            },
          ),
      );
    }, SECRET_REFRESH_MS);
    callers.timer.unref();
    return callers;
  }

  /** The callers with their secrets as last read. */
  all(): readonly HomelabCaller[] {
    return this.current;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async read(): Promise<HomelabCaller[]> {
    const problems: string[] = [];
    const out: HomelabCaller[] = [];
    for (const c of this.credentials) {
      try {
        if (!c.secretRef) throw new Error('it has no secretRef');
        const secret = Buffer.from(await this.resolve(c.secretRef, c.namespace), 'utf8');
        if (secret.length === 0) problems.push(`credential ${c.name}: its secret is empty`);
        else out.push({ credential: c.name, namespace: c.namespace, secret });
      } catch (e) {
        problems.push(`credential ${c.name}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    for (let i = 0; i < out.length; i++)
      for (let j = i + 1; j < out.length; j++)
        if (out[i]!.secret.equals(out[j]!.secret))
          problems.push(
            `credentials ${out[i]!.credential} and ${out[j]!.credential} have the same secret: a signature could not tell them apart; give each caller its own secret`,
          );
    if (problems.length > 0) throw new Error(`--homelab-api: ${problems.join('; ')}`);
    return out;
  }
}

/** The homelab DNS API's settings (`--homelab-api` and the flags that go with it). */
export interface HomelabApiSettings {
  /** HOST:PORT to listen on. */
  listen: string;
  /** One caller (`--homelab-api-secret-file`, `--homelab-api-namespace`): the credential `homelab-api`. */
  caller?: { secretFile: string; namespace: string };
  /** Nonces remembered per caller at most (`--homelab-api-max-nonces`). */
  maxNoncesPerCaller?: number;
  /** The listener's connection limits (`--homelab-api-max-connections` and the like). */
  connectionLimits?: Partial<HttpConnectionLimits>;
}

/**
 * The write-access table with the one-caller flags' credential added (kind webhook-hmac, named
 * `homelab-api`); refused when the table already names a credential so.
 */
export function withSingleCaller(
  access: WriteAccessConfig | undefined,
  caller: HomelabApiSettings['caller'],
): WriteAccessConfig | undefined {
  if (!caller) return access;
  const base = access ?? { credentials: [] };
  if (base.credentials.some((c) => c.name === SINGLE_CALLER_CREDENTIAL))
    throw new Error(
      `--homelab-api-secret-file: --write-access already has a credential named ${SINGLE_CALLER_CREDENTIAL}; give the caller there (kind webhook-hmac) or rename it`,
    );
  return {
    ...base,
    credentials: [
      ...base.credentials,
      {
        name: SINGLE_CALLER_CREDENTIAL,
        kind: 'webhook-hmac',
        namespace: caller.namespace,
        secretRef: { file: caller.secretFile },
      },
    ],
  };
}
