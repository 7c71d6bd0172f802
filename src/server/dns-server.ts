import dgram from 'node:dgram';
import net from 'node:net';
import { splitHostPort } from './alias-resolver.ts';
import type { QueryHandler } from './query-handler.ts';
import type { ServerMetrics } from './server-metrics.ts';

export interface DnsServerOptions {
  /** `host:port`, e.g. `127.0.0.1:5353` or `[::1]:53`. */
  listen: string;
  handler: QueryHandler;
  metrics?: ServerMetrics;
  /** RFC 7766 §6.2.3: close idle TCP connections; the clock restarts with each complete query. */
  tcpIdleTimeoutMs?: number;
  /** RFC 7766 §6.2.2: bound concurrent TCP connections; more are closed at once. */
  maxTcpConnections?: number;
  /** Share the port with other processes (SO_REUSEPORT on UDP, cluster-shared TCP listeners). */
  reusePort?: boolean;
}

/** Bytes a client may leave unread on a TCP connection before we give up on it. */
const MAX_PENDING_WRITE = 1 << 20;

/** The UDP and TCP listeners of the built-in server, both on the same address and port. */
export class DnsServer {
  private readonly options: Required<Omit<DnsServerOptions, 'metrics'>> & { metrics?: ServerMetrics };
  private udp?: dgram.Socket;
  private tcp?: net.Server;
  private readonly connections = new Set<net.Socket>();

  constructor(options: DnsServerOptions) {
    this.options = { tcpIdleTimeoutMs: 10_000, maxTcpConnections: 1000, reusePort: false, ...options };
  }

  /** The bound address (useful with port 0 in tests). */
  address(): { host: string; port: number } {
    const a = this.udp!.address();
    return { host: a.address, port: a.port };
  }

  async start(): Promise<void> {
    const { host, port } = splitHostPort(this.options.listen);
    const udp = dgram.createSocket({
      type: net.isIPv6(host) ? 'udp6' : 'udp4',
      reuseAddr: this.options.reusePort,
      reusePort: this.options.reusePort,
    });
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(port, host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    udp.on('error', () => this.options.metrics?.drop('udp_error'));
    udp.on('message', (msg, rinfo) => this.onUdp(udp, msg, rinfo));
    this.udp = udp;
    const boundPort = udp.address().port;
    const tcp = net.createServer({ noDelay: true }, (socket) => this.onTcp(socket));
    tcp.maxConnections = this.options.maxTcpConnections;
    tcp.on('drop', () => this.options.metrics?.drop('tcp_connection_limit'));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen({ port: boundPort, host, exclusive: !this.options.reusePort }, () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    this.tcp = tcp;
  }

  async stop(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    await Promise.all([
      new Promise<void>((resolve) => (this.udp ? this.udp.close(() => resolve()) : resolve())),
      new Promise<void>((resolve) => (this.tcp ? this.tcp.close(() => resolve()) : resolve())),
    ]);
  }

  private onUdp(udp: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo): void {
    let response: ReturnType<QueryHandler['handle']>;
    try {
      response = this.options.handler.handle(msg, 'udp');
    } catch {
      this.options.metrics?.drop('internal_error');
      return;
    }
    if (response === null) return;
    if (response instanceof Promise) {
      response.then(
        (bytes) => bytes && udp.send(bytes, rinfo.port, rinfo.address),
        () => this.options.metrics?.drop('internal_error'),
      );
      return;
    }
    udp.send(response, rinfo.port, rinfo.address);
  }

  /** RFC 7766 §8: two-octet length framing; queries are answered as they arrive (pipelining). */
  private onTcp(socket: net.Socket): void {
    this.connections.add(socket);
    socket.on('close', () => this.connections.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffer: Buffer = Buffer.alloc(0);
    const idle = () => socket.destroy();
    let timer = setTimeout(idle, this.options.tcpIdleTimeoutMs);
    const send = (bytes: Uint8Array | null) => {
      if (!bytes || socket.destroyed) return;
      const frame = Buffer.allocUnsafe(2 + bytes.length);
      frame.writeUInt16BE(bytes.length, 0);
      frame.set(bytes, 2);
      socket.write(frame);
      if (socket.writableLength > MAX_PENDING_WRITE) socket.destroy();
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      while (buffer.length >= 2) {
        const length = buffer.readUInt16BE(0);
        if (length === 0) {
          // A zero-length message is malformed; nothing sensible can follow it on this stream.
          this.options.metrics?.drop('tcp_zero_length');
          socket.destroy();
          return;
        }
        if (buffer.length < 2 + length) break;
        const message = buffer.subarray(2, 2 + length);
        buffer = buffer.subarray(2 + length);
        clearTimeout(timer);
        timer = setTimeout(idle, this.options.tcpIdleTimeoutMs);
        try {
          const response = this.options.handler.handle(message, 'tcp');
          if (response instanceof Promise) response.then(send, () => socket.destroy());
          else send(response);
        } catch {
          this.options.metrics?.drop('internal_error');
          socket.destroy();
          return;
        }
      }
    });
    socket.on('close', () => clearTimeout(timer));
  }
}
