import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { RateLimiter } from '../../writes/rate-limit.ts';
import type { RecordWriter } from '../../writes/record-writer.ts';
import {
  errorAnswer,
  type ForwardError,
  forwardStatus,
  type HopErrorCode,
  MAX_FORWARD_BODY_BYTES,
  parseForwardedWrite,
} from '../../writes/write-protocol.ts';

/** Who a bearer token belongs to (a TokenReview), or undefined when it does not authenticate. */
export type TokenReviewer = (token: string) => Promise<{ username: string } | undefined>;

export interface LeaderWriteEndpointOptions {
  review: TokenReviewer;
  /**
   * Kubernetes user names allowed to forward writes: the replicas' service accounts
   * (`system:serviceaccount:<namespace>:<name>`). Anybody else is refused, whatever the token.
   */
  forwarders: ReadonlySet<string>;
  /** The writer while this replica leads and has finished the journal; otherwise why not. */
  writer: () =>
    | RecordWriter
    | { refuse: 'NOT_LEADER' | 'UNAVAILABLE'; message: string; retryAfterSeconds: number };
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

/** Reviews are remembered this long (a replica sends the same token for its lifetime, ~1 h). */
const REVIEW_TTL_MS = 60_000;
/** And a refused token this long: a flood of bad tokens does not become a flood of TokenReviews. */
const REFUSED_TTL_MS = 10_000;
/** Remembered answers of each kind at most (refused tokens cannot push out the replicas' own). */
const MAX_REVIEWS = 1024;
/** TokenReviews of tokens not remembered, per second and at once: bogus tokens cost the API server little. */
const REVIEWS_PER_SECOND = 5;
const REVIEW_BURST = 20;

/**
 * The leader's `POST /v1/writes` (ADR 0016): a replica's forwarded write, authenticated by the
 * replica's Kubernetes token (TokenReview) and allowed only for the configured forwarders. The leader
 * applies the request with its own writer — credential table, quotas, ownership, delegations — so a
 * replica can neither widen what a credential may do nor write without naming one; what crosses the
 * hop is exactly a credential name and the request's id and changes.
 */
export function leaderWriteEndpoint(options: LeaderWriteEndpointOptions): {
  maxBodyBytes: number;
  authorize(headers: IncomingHttpHeaders): Promise<Answer | undefined>;
  handle(request: { headers: IncomingHttpHeaders; body: Buffer }): Promise<Answer>;
} {
  const now = options.now ?? Date.now;
  const accepted = new Map<string, { username: string; until: number }>();
  const refused = new Map<string, number>();
  const reviewRate = new RateLimiter();
  const remember = <V>(map: Map<string, V>, key: string, value: V) => {
    map.delete(key);
    if (map.size >= MAX_REVIEWS) map.delete(map.keys().next().value as string);
    map.set(key, value);
  };
  /** The user of a token, undefined when it does not authenticate, or a wait when reviews are rationed. */
  const review = async (token: string): Promise<string | undefined | { waitSeconds: number }> => {
    const key = createHash('sha256').update(token).digest('hex');
    const ok = accepted.get(key);
    if (ok && ok.until > now()) return ok.username;
    const bad = refused.get(key);
    if (bad !== undefined && bad > now()) return undefined;
    const wait = reviewRate.take('reviews', REVIEWS_PER_SECOND, REVIEW_BURST, now());
    if (wait > 0) return { waitSeconds: wait };
    const user = await options.review(token);
    if (user) remember(accepted, key, { username: user.username, until: now() + REVIEW_TTL_MS });
    else remember(refused, key, now() + REFUSED_TTL_MS);
    return user?.username;
  };
  const refuse = (code: HopErrorCode | 'UNAVAILABLE', message: string, retryAfterSeconds?: number) =>
    answer(forwardStatus(code), {
      error: { code, message, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) },
    });
  /** The caller, from the headers alone: refused before its body is read. */
  const authorize = async (headers: IncomingHttpHeaders): Promise<Answer | undefined> => {
    const token = /^Bearer ([^\s]+)$/i.exec(headers.authorization ?? '')?.[1];
    if (!token)
      return refuse('UNAUTHENTICATED', 'send the replica\'s Kubernetes token as "Authorization: Bearer"');
    let username: Awaited<ReturnType<typeof review>>;
    try {
      username = await review(token);
    } catch (e) {
      return refuse('NOT_LEADER', `the token cannot be reviewed now (${(e as Error).message}); retry`, 1);
    }
    if (typeof username === 'object')
      return refuse(
        'UNAVAILABLE',
        'too many tokens to review at once; retry later with the same token',
        username.waitSeconds,
      );
    if (username === undefined)
      return refuse('UNAUTHENTICATED', 'the token does not authenticate with the Kubernetes API');
    if (!options.forwarders.has(username)) {
      options.log?.('warn', 'refused a forwarded write from a user that is not a forwarder', {
        user: username,
      });
      return refuse(
        'FORBIDDEN',
        `${username} may not forward writes; the operator accepts them from ${[...options.forwarders].join(', ') || 'nobody (--write-forwarders is empty)'}`,
      );
    }
    return undefined;
  };
  return {
    maxBodyBytes: MAX_FORWARD_BODY_BYTES,
    authorize,
    async handle({ headers, body }) {
      // The HTTP server asked already before reading the body; asked again here (from the cache) for
      // callers of `handle` alone.
      const refusal = await authorize(headers);
      if (refusal) return refusal;
      const writer = options.writer();
      if (!('apply' in writer)) return refuse(writer.refuse, writer.message, writer.retryAfterSeconds);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        return refuse('BAD_REQUEST', 'the body is not JSON');
      }
      const forwarded = parseForwardedWrite(parsed);
      if (!forwarded.ok) return refuse('BAD_REQUEST', forwarded.message);
      try {
        const result = await writer.apply(forwarded.value.credential, forwarded.value.request);
        return answer(200, { result });
      } catch (e) {
        const { error } = errorAnswer(e);
        return answer(forwardStatus(error.code), { error });
      }
    },
  };
}

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

function answer(status: number, body: { result: unknown } | { error: ForwardError }): Answer {
  const retry = 'error' in body ? body.error.retryAfterSeconds : undefined;
  return {
    status,
    ...(retry !== undefined ? { headers: { 'retry-after': String(Math.max(1, Math.ceil(retry))) } } : {}),
    body: `${JSON.stringify(body)}\n`,
  };
}
