import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
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
const MAX_REVIEWS = 1024;

/**
 * The leader's `POST /v1/writes` (ADR 0016): a replica's forwarded write, authenticated by the
 * replica's Kubernetes token (TokenReview) and allowed only for the configured forwarders. The leader
 * applies the request with its own writer — credential table, quotas, ownership, delegations — so a
 * replica can neither widen what a credential may do nor write without naming one; what crosses the
 * hop is exactly a credential name and the request's id and changes.
 */
export function leaderWriteEndpoint(options: LeaderWriteEndpointOptions): {
  maxBodyBytes: number;
  handle(request: { headers: IncomingHttpHeaders; body: Buffer }): Promise<{
    status: number;
    headers?: Record<string, string>;
    body: string;
  }>;
} {
  const now = options.now ?? Date.now;
  const reviews = new Map<string, { username: string | undefined; until: number }>();
  const review = async (token: string): Promise<string | undefined> => {
    const key = createHash('sha256').update(token).digest('hex');
    const seen = reviews.get(key);
    if (seen && seen.until > now()) return seen.username;
    const user = await options.review(token);
    if (reviews.size >= MAX_REVIEWS) reviews.delete(reviews.keys().next().value as string);
    reviews.set(key, {
      username: user?.username,
      until: now() + (user ? REVIEW_TTL_MS : REFUSED_TTL_MS),
    });
    return user?.username;
  };
  const refuse = (code: HopErrorCode | 'UNAVAILABLE', message: string, retryAfterSeconds?: number) =>
    answer(forwardStatus(code), {
      error: { code, message, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) },
    });
  return {
    maxBodyBytes: MAX_FORWARD_BODY_BYTES,
    async handle({ headers, body }) {
      const token = /^Bearer ([^\s]+)$/i.exec(headers.authorization ?? '')?.[1];
      if (!token)
        return refuse('UNAUTHENTICATED', 'send the replica\'s Kubernetes token as "Authorization: Bearer"');
      let username: string | undefined;
      try {
        username = await review(token);
      } catch (e) {
        return refuse('NOT_LEADER', `the token cannot be reviewed now (${(e as Error).message}); retry`, 1);
      }
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

function answer(
  status: number,
  body: { result: unknown } | { error: ForwardError },
): { status: number; headers?: Record<string, string>; body: string } {
  const retry = 'error' in body ? body.error.retryAfterSeconds : undefined;
  return {
    status,
    ...(retry !== undefined ? { headers: { 'retry-after': String(Math.max(1, Math.ceil(retry))) } } : {}),
    body: `${JSON.stringify(body)}\n`,
  };
}
