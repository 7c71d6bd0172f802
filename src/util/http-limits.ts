/**
 * Connection limits of an HTTP listener (the HTTP API and metrics, the homelab DNS API, the
 * ExternalDNS webhook): how many connections it holds at once, how many of them one client (an IPv4
 * address, an IPv6 /64) holds, and how long a connection may take to send its headers and its
 * request. Every connection
 * is a file descriptor shared with DNS over TCP, the state and the manifests: a client that opens
 * connections and sends nothing must not take them all.
 */
import http from 'node:http';
import { ConnectionsPerClient } from './client-network.ts';

export interface HttpConnectionLimits {
  /** Connections held at once; more are closed as they arrive. */
  maxConnections: number;
  /**
   * Connections one client holds at once (an IPv4 address, an IPv6 /64); more from it are closed as
   * they arrive.
   */
  maxConnectionsPerClient: number;
  /** Time from a connection's (or a request's) start to its last header; then 408 and closed. */
  headersTimeoutMs: number;
  /** Time to receive a whole request (at least `headersTimeoutMs`); then 408 and closed. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
}

/** The limits of a listener unless configured otherwise: a few hundred connections, seconds-long waits. */
export const DEFAULT_HTTP_CONNECTION_LIMITS: HttpConnectionLimits = {
  maxConnections: 256,
  maxConnectionsPerClient: 32,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};

/**
 * How often connections are checked against the headers and request timeouts: a quarter of the
 * headers timeout, from 10 ms to 1 s (Node checks every 30 s by default, so a connection that sends
 * nothing would live up to half a minute past its timeout).
 */
export function connectionsCheckingInterval(limits: Pick<HttpConnectionLimits, 'headersTimeoutMs'>): number {
  return Math.min(1_000, Math.max(10, Math.floor(limits.headersTimeoutMs / 4)));
}

/**
 * An HTTP server held to `limits`: Node's `maxConnections`, the headers, request and keep-alive
 * timeouts, and a count of connections per client (an IPv4 address, an IPv6 /64; a connection over
 * the client's count is destroyed at once, before anything is read from it). `onRefused` hears each
 * connection closed for a limit (for a metric).
 */
export function createLimitedHttpServer(
  limits: HttpConnectionLimits,
  handler: http.RequestListener,
  onRefused?: (reason: 'max-connections' | 'max-connections-per-client') => void,
): http.Server {
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: Math.max(limits.requestTimeoutMs, limits.headersTimeoutMs),
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingInterval(limits),
      maxHeaderSize: 16 * 1024,
    },
    handler,
  );
  server.maxConnections = limits.maxConnections;
  server.maxHeadersCount = 64;
  if (onRefused) server.on('drop', () => onRefused('max-connections'));
  // An IPv6 client by its /64: one host holds a whole /64 and could spread over its addresses.
  const perClient = new ConnectionsPerClient(limits.maxConnectionsPerClient);
  server.on('connection', (socket) => {
    const admitted = perClient.admit(socket);
    if (admitted === 'admitted') return;
    if (admitted === 'over-limit') onRefused?.('max-connections-per-client');
    socket.destroy();
  });
  return server;
}
