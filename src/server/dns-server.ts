import dgram from 'node:dgram';
import net from 'node:net';
import { ConnectionsPerClient } from '../util/client-network.ts';
import { splitHostPort } from '../util/host-port.ts';
import type { QueryHandler } from './query-handler.ts';
import type { ServerMetrics } from './server-metrics.ts';
import { tcpFrame } from './tcp-frame.ts';
import { TransferHandler } from './transfer/transfer-handler.ts';
import { UdpEndpoint, type UdpPath } from './udp-endpoint.ts';
import { isUpdate, type UpdateResponder } from './update/update-handler.ts';

export interface DnsServerOptions {
  /** `host:port`, e.g. `127.0.0.1:5353` or `[::1]:53`. */
  listen: string;
  handler: QueryHandler;
  metrics?: ServerMetrics;
  /** RFC 7766 §6.2.3: close idle TCP connections; the clock restarts with each complete query. */
  tcpIdleTimeoutMs?: number;
  /**
   * RFC 7766 §6.2.3: the idle timeout while three quarters of maxTcpConnections or more are open, so
   * that slots come free sooner under load.
   */
  tcpBusyIdleTimeoutMs?: number;
  /**
   * An accepted zone transfer that the secondary takes nothing of for this long is given up (default
   * 60 s). Not the idle timeout: the kernel says a socket is writable again only once a good part of
   * its send buffer (megabytes) is free, which for a secondary reading at tens of kB/s takes longer
   * than 10 s while the transfer is making progress.
   */
  transferStallTimeoutMs?: number;
  /** RFC 7766 §6.2.2: bound concurrent TCP connections; more are closed at once. */
  maxTcpConnections?: number;
  /**
   * RFC 7766 §6.2.2: TCP connections one client may hold (an IPv4 address, an IPv6 /64; see
   * clientNetworkKey); more are closed at once. 0: no limit. Counted per DnsServer, i.e. per DNS thread.
   */
  maxTcpPerSource?: number;
  /** Share the port with other processes (SO_REUSEPORT on UDP, cluster-shared TCP listeners). */
  reusePort?: boolean;
  /** Answers AXFR and IXFR; without it they are refused. */
  transfers?: TransferHandler;
  /** Answers RFC 2136 UPDATE; without it UPDATE gets NOTIMP like any other opcode we do not serve. */
  updates?: UpdateResponder;
}

/** Requested UDP socket buffer size. */
const UDP_BUFFER_BYTES = 4 << 20;

/** Bytes a client may leave unread on a TCP connection before we give up on it. */
const MAX_PENDING_WRITE = 1 << 20;
/**
 * Answers a client may leave unread on a TCP connection before we give up on it: a small answer (a
 * 31-byte REFUSED) costs the heap several times its size in buffering, so bytes alone let a client
 * that pipelines small requests and never reads hold tens of MB per connection.
 */
const MAX_PENDING_ANSWERS = 4096;
/** TCP connections one client (IPv4 address, IPv6 /64) may hold per DNS process or thread. */
export const DEFAULT_TCP_PER_SOURCE = 64;
/** UPDATEs one TCP connection may have unanswered at once (the handler caps them over all, too). */
export const MAX_UPDATES_PER_CONNECTION = 8;

/** The UDP and TCP listeners of the built-in server, both on the same address and port. */
export class DnsServer {
  private readonly options: Required<Omit<DnsServerOptions, 'metrics' | 'transfers' | 'updates'>> &
    Pick<DnsServerOptions, 'metrics' | 'transfers' | 'updates'>;
  private udp?: dgram.Socket;
  private endpoint?: UdpEndpoint;
  private tcp?: net.Server;
  private bound?: { host: string; port: number };
  /** The open TCP connections: when each one's last complete query came, and whether it has work pending. */
  private readonly connections = new Map<net.Socket, { last: number; busy: () => boolean }>();
  /** Open TCP connections per client network (clientNetworkKey). */
  private readonly perSource: ConnectionsPerClient;

  constructor(options: DnsServerOptions) {
    this.options = {
      tcpIdleTimeoutMs: 10_000,
      tcpBusyIdleTimeoutMs: 2_000,
      transferStallTimeoutMs: 60_000,
      maxTcpConnections: 1000,
      maxTcpPerSource: DEFAULT_TCP_PER_SOURCE,
      reusePort: false,
      ...options,
    };
    this.perSource = new ConnectionsPerClient(this.options.maxTcpPerSource);
  }

  /** How UDP datagrams move (see UdpEndpoint); undefined before start(). */
  get udpPath(): UdpPath | undefined {
    return this.endpoint?.path;
  }

  /** The bound address (useful with port 0 in tests); after stop(), the address it had. */
  address(): { host: string; port: number } {
    if (this.udp) {
      const a = this.udp.address();
      this.bound = { host: a.address, port: a.port };
    }
    return this.bound!;
  }

  async start(): Promise<void> {
    const { host, port } = splitHostPort(this.options.listen);
    // With port 0 the UDP socket gets a free port, but the same number may be taken for TCP (the two
    // port spaces are separate, and busy hosts have many TCP sockets): then try another, a few times.
    for (let attempt = 1; ; attempt++) {
      const udp = await this.bindUdp(host, port);
      try {
        this.tcp = await this.listenTcp(host, udp.address().port);
      } catch (e) {
        await new Promise<void>((resolve) => udp.close(() => resolve()));
        if (port !== 0 || (e as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 20) throw e;
        continue;
      }
      try {
        // Room for bursts: queries that arrive while the event loop is busy wait here instead of being
        // dropped by the kernel (capped by net.core.rmem_max / wmem_max).
        udp.setRecvBufferSize(UDP_BUFFER_BYTES);
        udp.setSendBufferSize(UDP_BUFFER_BYTES);
      } catch {
        // Not fatal: the kernel keeps its default sizes.
      }
      this.endpoint = new UdpEndpoint(
        udp,
        (msg, address, peerPort) => this.onUdp(msg, address, peerPort),
        () => this.options.metrics?.drop('udp_error'),
      );
      this.udp = udp;
      this.address();
      return;
    }
  }

  private async bindUdp(host: string, port: number): Promise<dgram.Socket> {
    const udp = dgram.createSocket({
      type: net.isIPv6(host) ? 'udp6' : 'udp4',
      reuseAddr: this.options.reusePort,
      reusePort: this.options.reusePort,
    });
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      // exclusive: in a cluster worker, bind our own socket (shared with SO_REUSEPORT) rather than
      // one handed out by the primary.
      udp.bind({ port, address: host, exclusive: true }, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    return udp;
  }

  private async listenTcp(host: string, port: number): Promise<net.Server> {
    const tcp = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => this.onTcp(socket));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen({ port, host, exclusive: true, reusePort: this.options.reusePort }, () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    return tcp;
  }

  /** Closes the listeners and every connection; calling it again does nothing. */
  async stop(): Promise<void> {
    const { udp, tcp } = this;
    this.udp = undefined;
    this.tcp = undefined;
    for (const socket of this.connections.keys()) socket.destroy();
    await Promise.all([
      new Promise<void>((resolve) => (udp ? udp.close(() => resolve()) : resolve())),
      new Promise<void>((resolve) => (tcp ? tcp.close(() => resolve()) : resolve())),
    ]);
  }

  private onUdp(msg: Buffer, address: string, port: number): void {
    // RFC 768: a zero source port means the sender expects no reply, and none can be sent: such
    // datagrams, e.g. spoofed ones, are dropped before any work is done.
    if (port === 0) {
      this.options.metrics?.drop('udp_source_port_zero');
      return;
    }
    // One clock reading per datagram: the handler's latency metric and the rate limiter share it.
    const received = performance.now();
    const updates = this.options.updates;
    if (updates !== undefined && isUpdate(msg)) {
      updates.handle(msg, address).then(
        (bytes) => bytes && this.sendUdp(bytes, address, port, performance.now()),
        () => this.options.metrics?.drop('internal_error'),
      );
      return;
    }
    const transfers = this.options.transfers;
    if (transfers !== undefined && TransferHandler.isTransfer(msg)) {
      // IXFR over UDP gets the SOA (the client retries on TCP); AXFR over UDP is refused (RFC 5936 §4.2).
      const [reply] = transfers.handle(msg, address, false);
      if (reply) this.sendUdp(reply, address, port, received);
      return;
    }
    const handler = this.options.handler;
    let response: ReturnType<QueryHandler['handle']>;
    try {
      response = handler.handle(msg, 'udp', received, address);
    } catch {
      this.options.metrics?.drop('internal_error');
      return;
    }
    if (response === null) return;
    if (response instanceof Promise) {
      const wildcard = handler.lastWildcard;
      response.then(
        (bytes) => bytes && this.sendUdp(bytes, address, port, performance.now(), wildcard),
        () => this.options.metrics?.drop('internal_error'),
      );
      return;
    }
    this.sendUdp(response, address, port, received, handler.lastWildcard);
  }

  /**
   * Sends a UDP response, unless response rate limiting drops it or sends it truncated instead (TCP is
   * never limited); a send that cannot start (e.g. the socket was closed meanwhile) is counted, not thrown.
   * `wildcard`: the wildcard a synthesised answer came from (`QueryHandler.lastWildcard`), else 0.
   */
  private sendUdp(response: Uint8Array, address: string, port: number, now: number, wildcard = 0): void {
    const limiter = this.options.handler.rateLimiter;
    const bytes = limiter === undefined ? response : limiter.filter(response, address, now, wildcard);
    if (bytes === null) return;
    const endpoint = this.endpoint;
    if (endpoint === undefined || this.udp === undefined || !endpoint.send(bytes, port, address)) {
      this.options.metrics?.drop('udp_send_error');
    }
  }

  /**
   * What the TCP connections hold: their number and the bytes written to them that the kernel has not
   * taken yet (what clients that do not read cost this process).
   */
  tcpBacklog(): { connections: number; pendingWriteBytes: number } {
    let pendingWriteBytes = 0;
    for (const socket of this.connections.keys()) pendingWriteBytes += socket.writableLength;
    return { connections: this.connections.size, pendingWriteBytes };
  }

  /**
   * RFC 7766 §6.2.2: counts a new connection under its client's network, or closes it at once (and
   * counts the drop) when that network holds maxTcpPerSource connections already.
   */
  private admit(socket: net.Socket): boolean {
    const admitted = this.perSource.admit(socket);
    if (admitted === 'admitted') return true;
    if (admitted === 'over-limit') this.options.metrics?.drop('tcp_source_limit');
    socket.destroy();
    return false;
  }

  /**
   * Closes the connection idle the longest (its last complete query the oldest, nothing pending or
   * unwritten); false when every connection is busy. Counted as `tcp_idle_evicted`.
   */
  private evictIdlest(): boolean {
    let oldest: net.Socket | undefined;
    let at = Number.POSITIVE_INFINITY;
    for (const [socket, { last, busy }] of this.connections) {
      if (last < at && !busy()) {
        at = last;
        oldest = socket;
      }
    }
    if (oldest === undefined) return false;
    this.options.metrics?.drop('tcp_idle_evicted');
    oldest.destroy();
    this.connections.delete(oldest);
    return true;
  }

  /** RFC 7766 §6.2.3: the idle timeout, shorter while most connection slots are taken. */
  private idleTimeoutMs(): number {
    const { tcpIdleTimeoutMs, tcpBusyIdleTimeoutMs, maxTcpConnections } = this.options;
    return this.connections.size * 4 >= maxTcpConnections * 3
      ? Math.min(tcpIdleTimeoutMs, tcpBusyIdleTimeoutMs)
      : tcpIdleTimeoutMs;
  }

  /**
   * RFC 7766 §8: two-octet length framing; queries are answered as they arrive (pipelining). A client
   * that half-closes after its queries still gets every answer: the connection is ended only once no
   * response is pending (RFC 7766 §6.2.3: a connection is idle only when every query has been answered).
   *
   * Every answer but an accepted zone transfer (a refused transfer request's included) counts against
   * MAX_PENDING_WRITE bytes and MAX_PENDING_ANSWERS answers: a client that does not read its answers is
   * cut off. An accepted transfer (ACL and TSIG passed) is written message by message as the client
   * takes them (backpressure: the next waits for 'drain'), and the connection is read no further
   * until it is written. The idle clock (RFC 7766 §6.2.3) runs for everything except such a transfer,
   * which has its own: a secondary that takes nothing of it for `transferStallTimeoutMs` is closed.
   */
  private onTcp(socket: net.Socket): void {
    if (!this.admit(socket)) return;
    // All slots taken: the connection idle the longest (nothing pending, nothing left to write) makes
    // room (RFC 7766 §6.2.3), so that clients holding many connections and refreshing them cannot
    // keep a new one out; with none idle, the new one is closed.
    if (this.connections.size >= this.options.maxTcpConnections && !this.evictIdlest()) {
      this.options.metrics?.drop('tcp_connection_limit');
      socket.destroy();
      return;
    }
    socket.on('close', () => this.connections.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffer: Buffer = Buffer.alloc(0);
    /** Responses still being computed (ALIAS lookups). */
    let pending = 0;
    /** UPDATEs among them. */
    let pendingUpdates = 0;
    let clientEnded = false;
    /** An accepted transfer is being written; reading waits until it is. */
    let transferring = false;
    const activity = {
      last: performance.now(),
      busy: () => pending > 0 || transferring || socket.writableLength > 0,
    };
    this.connections.set(socket, activity);
    const idle = () => socket.destroy();
    let timer = setTimeout(idle, this.idleTimeoutMs());
    const restartIdle = () => {
      activity.last = performance.now();
      clearTimeout(timer);
      timer = setTimeout(idle, this.idleTimeoutMs());
    };
    /**
     * A transfer's last messages are with the kernel (megabytes of socket buffers): the secondary has
     * the stall timeout, not the idle one, to take them before the connection is closed under it.
     */
    const afterTransfer = () => {
      activity.last = performance.now();
      clearTimeout(timer);
      timer = setTimeout(idle, this.options.transferStallTimeoutMs);
    };
    /** Ends our side once nothing is pending and the client ended its side. */
    const endIfDone = () => {
      if (clientEnded && pending === 0 && !transferring && !socket.destroyed) socket.end();
    };
    /** Answers written and not yet taken by the kernel (each holds a buffer and a request). */
    let unflushed = 0;
    const flushed = () => {
      unflushed--;
    };
    const send = (bytes: Uint8Array | null) => {
      if (!bytes || socket.destroyed || !socket.writable) return;
      unflushed++;
      socket.write(tcpFrame(bytes), flushed);
      if (socket.writableLength > MAX_PENDING_WRITE || unflushed > MAX_PENDING_ANSWERS) socket.destroy();
    };
    const settle = (bytes: Uint8Array | null) => {
      pending--;
      send(bytes);
      endIfDone();
    };
    socket.on('end', () => {
      clientEnded = true;
      endIfDone();
    });
    /** Reading is paused while the connection has its maximum of UPDATEs unanswered. */
    let waitingForUpdates = false;
    const resumeReading = () => {
      if (waitingForUpdates || transferring || socket.destroyed) return;
      socket.resume();
      readFrames();
    };
    /**
     * Writes an accepted transfer's messages as the client takes them: false when it has to wait for
     * 'drain' (one listener at a time), and reading waits with it.
     */
    const writeTransfer = (messages: Uint8Array[]): boolean => {
      let next = 0;
      const writeMore = (): boolean => {
        while (next < messages.length) {
          if (socket.destroyed || !socket.writable) return false;
          if (!socket.write(tcpFrame(messages[next++]!))) {
            // The client has not taken what was written (the last message included): wait for it,
            // for at most the stall timeout. The transfer is over only once it has all been taken,
            // so the idle clock starts when it is (RFC 7766 §6.2.3: not idle while answers wait).
            clearTimeout(timer);
            timer = setTimeout(idle, this.options.transferStallTimeoutMs);
            socket.once('drain', () => {
              clearTimeout(timer);
              if (!writeMore()) return;
              transferring = false;
              afterTransfer();
              endIfDone();
              resumeReading();
            });
            return false;
          }
        }
        return true;
      };
      if (writeMore()) return true;
      transferring = true;
      socket.pause();
      return false;
    };
    const readFrames = () => {
      while (buffer.length >= 2 && !socket.destroyed && !transferring) {
        const length = buffer.readUInt16BE(0);
        if (length === 0) {
          // A zero-length message is malformed; nothing sensible can follow it on this stream.
          this.options.metrics?.drop('tcp_zero_length');
          socket.destroy();
          return;
        }
        if (buffer.length < 2 + length) break;
        const message = buffer.subarray(2, 2 + length);
        const updates = this.options.updates;
        const update = updates !== undefined && isUpdate(message);
        if (update && pendingUpdates >= MAX_UPDATES_PER_CONNECTION) {
          // A connection may not pile UPDATEs up: it is read no further (TCP backpressure: the
          // client's sends stall) until one of its UPDATEs is answered. Memory stays bounded and
          // every message is still answered, in order of arrival.
          if (!waitingForUpdates) this.options.metrics?.drop('tcp_update_limit');
          waitingForUpdates = true;
          socket.pause();
          return;
        }
        buffer = buffer.subarray(2 + length);
        restartIdle();
        try {
          if (update) {
            pending++;
            pendingUpdates++;
            updates!.handle(message, socket.remoteAddress).then(
              (bytes) => {
                pendingUpdates--;
                settle(bytes);
                if (waitingForUpdates) {
                  waitingForUpdates = false;
                  resumeReading();
                }
              },
              () => socket.destroy(),
            );
            continue;
          }
          const transfers = this.options.transfers;
          if (transfers && TransferHandler.isTransfer(message)) {
            const reply = transfers.respond(message, socket.remoteAddress, true);
            if (reply.transfer) {
              if (writeTransfer(reply.messages)) {
                afterTransfer();
                continue;
              }
              return;
            }
            // Refused or an error: one small answer, under the same write caps as any query.
            for (const bytes of reply.messages) send(bytes);
            continue;
          }
          const response = this.options.handler.handle(
            message,
            'tcp',
            performance.now(),
            socket.remoteAddress,
          );
          if (response instanceof Promise) {
            pending++;
            response.then(settle, () => socket.destroy());
          } else send(response);
        } catch {
          this.options.metrics?.drop('internal_error');
          socket.destroy();
          return;
        }
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      if (!waitingForUpdates && !transferring) readFrames();
    });
    socket.on('close', () => clearTimeout(timer));
  }
}
