import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { RecordWriter } from '../../writes/record-writer.ts';
import {
  FORWARD_PATH,
  type ForwardedWrite,
  MAX_FORWARD_BODY_BYTES,
  MAX_FORWARD_RESPONSE_BYTES,
  readForwardAnswer,
} from '../../writes/write-protocol.ts';
import { WriteError, type WriteRequest, type WriteResult } from '../../writes/write-request.ts';
import type { KubeApi } from '../kubernetes/kube-api.ts';

/**
 * The annotation the operator's leader writes on its Lease, in the same object write as
 * holderIdentity: the base URL of its HTTP port (`http://<pod IP>:<port>`), where it serves
 * `POST /v1/writes`.
 */
export const LEADER_ENDPOINT_ANNOTATION = 'dns.zonekeeper.dev/write-endpoint';

/** Where the leader takes writes, or why there is none to take them now. */
export type LeaderLookup = () => Promise<
  { identity: string; url: string } | { none: string; retryAfterSeconds: number }
>;

/** Slack on the Lease's expiry, for the clocks of the leader's node and this one. */
const EXPIRY_SLACK_MS = 5000;

/**
 * The leader as its Lease names it: holderIdentity, and the endpoint annotation written with it. A
 * released lease (empty holder), an expired one or one without the annotation (an operator without
 * API writes) has no leader to forward to.
 */
export function leaseLeader(
  api: Pick<KubeApi, 'readLease'>,
  namespace: string,
  name: string,
  now: () => number = Date.now,
): LeaderLookup {
  return async () => {
    let lease: Awaited<ReturnType<KubeApi['readLease']>>;
    try {
      lease = await api.readLease(namespace, name);
    } catch (e) {
      return {
        none: `the Lease ${namespace}/${name} cannot be read (${(e as Error).message}); the server needs get on it (the chart's apiWrites)`,
        retryAfterSeconds: 5,
      };
    }
    const duration = lease?.leaseDurationSeconds ?? 15;
    const holder = lease?.holderIdentity;
    if (!lease || !holder)
      return { none: `no operator holds the Lease ${namespace}/${name}`, retryAfterSeconds: duration };
    const renewed = lease.renewTime ? Date.parse(lease.renewTime) : Number.NaN;
    if (Number.isFinite(renewed) && renewed + duration * 1000 + EXPIRY_SLACK_MS < now())
      return {
        none: `the Lease ${namespace}/${name} of ${holder} has expired; a new leader is being elected`,
        retryAfterSeconds: duration,
      };
    const url = lease.annotations?.[LEADER_ENDPOINT_ANNOTATION];
    if (!url || !/^https?:\/\/[^\s/]+$/.test(url))
      return {
        none: `the leader ${holder} does not take API writes (no ${LEADER_ENDPOINT_ANNOTATION} on its Lease: run the operator with --write-access)`,
        retryAfterSeconds: duration,
      };
    return { identity: holder, url };
  };
}

/** The audience of the token a server replica presents on the forwarding hop, unless configured otherwise. */
export const DEFAULT_WRITE_AUDIENCE = 'zonekeeper-writes';

/**
 * The token for the forwarding hop, read from a file before each use: a projected service-account
 * token with the hop's own audience (`--write-token-file`), which the kubelet rewrites before it
 * expires. Never the replica's normal service-account token: that one is a credential for the API
 * server, and the hop may be cleartext (ADR 0016).
 */
export function fileToken(file: string): () => Promise<string | undefined> {
  return async () => {
    try {
      const token = (await readFile(file, 'utf8')).trim();
      return token === '' ? undefined : token;
    } catch {
      return undefined;
    }
  };
}

/** What a caller is told when the write cannot reach a leader that applies it; the server's log says why. */
const UNAVAILABLE_MESSAGE =
  "records cannot be written now (UNAVAILABLE); the zonekeeper server's logs say why";

export interface ForwardingWriterOptions {
  leader: LeaderLookup;
  /**
   * The token this replica presents to the leader, which reviews it for the hop's audience: a
   * projected service-account token (see `fileToken`), never the replica's API-server token.
   */
  token: () => Promise<string | undefined>;
  /** Per attempt (default 10 s). */
  timeoutMs?: number;
  /** Attempts when the leader cannot be reached, changes, or its store fails (default 3). */
  attempts?: number;
  /** Backoff before each retry (default 200 ms, doubled). */
  backoffMs?: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}

/**
 * `RecordWriter` on a `zonekeeper server` replica: the request goes to the operator's leader (found
 * through its Lease), as RFC 2136 §6 has a secondary forward an UPDATE to the primary. The leader
 * decides everything (credential, quotas, ownership, delegations); the replica only carries the
 * credential its front door authenticated and the request's id and changes.
 *
 * Every forwarded request has an id (the caller's, or one made here), so a retry after a timeout or a
 * lost answer is answered from the leader's replay memory instead of being applied twice.
 */
export class ForwardingWriter implements RecordWriter {
  private readonly options: ForwardingWriterOptions;

  constructor(options: ForwardingWriterOptions) {
    this.options = options;
  }

  async apply(credential: string, request: WriteRequest): Promise<WriteResult> {
    const ownId = request?.id === undefined;
    // Exactly these fields cross the hop: nothing else a caller put in the request rides along.
    const forwarded: ForwardedWrite = {
      credential,
      request: { id: ownId ? `fwd-${randomUUID()}` : request.id!, changes: request?.changes },
    };
    const body = JSON.stringify(forwarded);
    if (Buffer.byteLength(body) > MAX_FORWARD_BODY_BYTES)
      throw new WriteError(
        'REQUEST_TOO_LARGE',
        `the request is larger than ${MAX_FORWARD_BODY_BYTES} bytes; split it into several requests`,
      );
    const attempts = Math.max(1, this.options.attempts ?? 3);
    let delay = this.options.backoffMs ?? 200;
    let last: WriteError | undefined;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) {
        await new Promise((r) => setTimeout(r, delay));
        delay *= 2;
      }
      const outcome = await this.attempt(body);
      if ('result' in outcome) {
        // The id was made here: a replay is this writer's own earlier attempt, not the caller's.
        return ownId ? { ...outcome.result, replayed: false } : outcome.result;
      }
      last = outcome.error;
      if (!outcome.retry) break;
      this.options.log?.('warn', 'forwarding a write to the operator leader failed; retrying', {
        attempt,
        error: last.message,
      });
    }
    throw last!;
  }

  private async attempt(
    body: string,
  ): Promise<{ result: WriteResult } | { error: WriteError; retry: boolean }> {
    const leader = await this.options.leader();
    // Callers learn the stable code and what to do; where the leader is and why it failed go to the log.
    if ('none' in leader) {
      this.options.log?.('warn', 'no operator leader takes forwarded writes', { reason: leader.none });
      return {
        error: new WriteError(
          'UNAVAILABLE',
          `${UNAVAILABLE_MESSAGE}; retry after ${leader.retryAfterSeconds} s`,
          {
            retryAfterSeconds: leader.retryAfterSeconds,
          },
        ),
        retry: true,
      };
    }
    const token = await this.options.token();
    if (!token) {
      this.options.log?.(
        'warn',
        'this replica has no token for the forwarding hop: give zonekeeper server --write-token-file (the chart mounts a projected service-account token)',
      );
      return { error: new WriteError('UNAVAILABLE', `${UNAVAILABLE_MESSAGE}; retry later`), retry: false };
    }
    let status: number;
    let text: string;
    try {
      const response = await fetch(`${leader.url}${FORWARD_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      status = response.status;
      text = await readBounded(response, MAX_FORWARD_RESPONSE_BYTES);
    } catch (e) {
      const cause = (e as Error).name === 'TimeoutError' ? 'it did not answer in time' : (e as Error).message;
      this.options.log?.('warn', 'the operator leader cannot be reached', {
        leader: leader.identity,
        url: leader.url,
        error: cause,
      });
      return {
        error: new WriteError('UNAVAILABLE', `${UNAVAILABLE_MESSAGE}; retry with the same request id`, {
          retryAfterSeconds: 1,
        }),
        retry: true,
      };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    try {
      return { result: readForwardAnswer(status, parsed) };
    } catch (e) {
      let error = e as WriteError;
      const code = (parsed as { error?: { code?: string } } | undefined)?.error?.code;
      if (error.code === 'UNAVAILABLE') {
        // The hop refused this replica, leadership moved, or the leader's store failed: details that
        // name the cluster's inner workings, for the log only.
        this.options.log?.('warn', 'the operator leader did not apply the forwarded write', {
          leader: leader.identity,
          code: code ?? `HTTP ${status}`,
          error: error.message,
        });
        error = new WriteError('UNAVAILABLE', `${UNAVAILABLE_MESSAGE}; retry with the same request id`, {
          ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
        });
      }
      // Leadership moved or the leader's store failed: the same id makes a retry safe.
      return { error, retry: code === 'NOT_LEADER' || code === 'UNAVAILABLE' };
    }
  }
}

async function readBounded(response: Response, limit: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.length;
    if (size > limit) throw new Error(`the answer is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
