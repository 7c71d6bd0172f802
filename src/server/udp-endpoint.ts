import type dgram from 'node:dgram';

/** Receives one datagram: its bytes and where to send the answer. */
export type DatagramListener = (message: Buffer, address: string, port: number) => void;

/**
 * How datagrams move: `handle` talks to the socket's libuv handle directly; `dgram` is the public
 * `dgram.Socket` API. Both make the same system calls; `handle` skips per-datagram JavaScript that a
 * DNS server does not need (see docs/adr/0010-udp-handle-fast-path.md).
 */
export type UdpPath = 'handle' | 'dgram';

/** The shape of Node's internal UDP handle that the fast path relies on. */
interface UdpHandle {
  onmessage: (nread: number, handle: unknown, buf: Buffer, rinfo: { address: string; port: number }) => void;
  send(
    req: object,
    list: Uint8Array[],
    count: number,
    port: number,
    address: string,
    hasCallback: boolean,
  ): number;
}

interface SendWrapConstructor {
  new (): { list?: Uint8Array[] | undefined };
}

/**
 * A bound UDP socket seen as "datagram in, datagram out", with the cheapest path Node offers.
 *
 * Node's `socket.send(buf, port, address)` resolves the address through `dns.lookup` (a `nextTick`
 * even for a literal), validates and copies its arguments, and emits `'message'` through an
 * EventEmitter; at tens of thousands of datagrams per second per core that matters (bench/udp-floor.ts:
 * a bare responder answers about 57k qps through `dgram`, 62k through the handle). The handle
 * path calls the same libuv handle `dgram` calls, with the address and port a received datagram
 * already carries. It depends on Node internals, so it is feature-checked when the socket is
 * attached, and anything unexpected falls back to the public API; `path` says which one is in use.
 */
export class UdpEndpoint {
  readonly path: UdpPath;
  private readonly socket: dgram.Socket;
  private readonly handle: UdpHandle | undefined;
  private readonly SendWrap: SendWrapConstructor | undefined;
  /** A request object free for the next send (see `send`). */
  private idleReq: { list?: Uint8Array[] | undefined } | undefined;

  /**
   * Attaches to a bound socket. `onError` gets receive errors (the socket keeps running). The
   * environment variable ZONEKEEPER_UDP_PATH=dgram forces the public API (for comparison and as an
   * escape hatch).
   */
  constructor(
    socket: dgram.Socket,
    listener: DatagramListener,
    onError: (error: Error) => void,
    preferred: UdpPath = process.env.ZONEKEEPER_UDP_PATH === 'dgram' ? 'dgram' : 'handle',
  ) {
    this.socket = socket;
    const internals = preferred === 'handle' ? handleInternals(socket) : undefined;
    if (internals) {
      this.path = 'handle';
      this.handle = internals.handle;
      this.SendWrap = internals.SendWrap;
      const fallback = internals.handle.onmessage;
      internals.handle.onmessage = (nread, handle, buf, rinfo) => {
        // nread < 0 is a receive error: dgram's own handler turns it into an 'error' event.
        if (nread < 0) return fallback(nread, handle, buf, rinfo);
        listener(buf, rinfo.address, rinfo.port);
      };
      socket.on('error', onError);
    } else {
      this.path = 'dgram';
      this.handle = undefined;
      this.SendWrap = undefined;
      socket.on('error', onError);
      socket.on('message', (msg, rinfo) => listener(msg, rinfo.address, rinfo.port));
    }
  }

  /**
   * Sends one datagram; false when it could not start (socket closed, bad address): the caller counts
   * it, nothing is thrown. A send the kernel cannot take at once is queued by libuv, as with dgram.
   */
  send(bytes: Uint8Array, port: number, address: string): boolean {
    const handle = this.handle;
    if (handle === undefined) {
      try {
        this.socket.send(bytes, port, address);
        return true;
      } catch {
        return false;
      }
    }
    // The request object of a send that completed at once is reused: most sends do, and making one
    // costs a call into C++. A queued send's request belongs to libuv until it completes.
    const req = this.idleReq ?? new this.SendWrap!();
    this.idleReq = undefined;
    // The request keeps the bytes alive until libuv is done with them (only matters when queued).
    const list = [bytes];
    req.list = list;
    let result: number;
    try {
      result = handle.send(req, list, 1, port, address, false);
    } catch {
      return false;
    }
    // Sent at once (bytes + 1): Node returned before wrapping the request, so it is free again.
    if (result > 0) {
      req.list = undefined;
      this.idleReq = req;
    }
    // > 0: sent at once (bytes + 1); 0: queued by libuv; < 0: a libuv error code.
    return result >= 0;
  }
}

/** The internal handle and SendWrap of a bound socket, when this Node has them as expected. */
function handleInternals(
  socket: dgram.Socket,
): { handle: UdpHandle; SendWrap: SendWrapConstructor } | undefined {
  try {
    const stateKey = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol');
    if (stateKey === undefined) return undefined;
    const state = (socket as unknown as Record<symbol, { handle?: Partial<UdpHandle> } | undefined>)[
      stateKey
    ];
    const handle = state?.handle;
    if (typeof handle?.send !== 'function' || typeof handle.onmessage !== 'function') return undefined;
    // process.binding('udp_wrap') is on Node's allow-list of legacy bindings; it is where dgram's own
    // SendWrap comes from.
    const binding = (
      process as unknown as { binding(name: string): { SendWrap?: SendWrapConstructor } }
    ).binding('udp_wrap');
    if (typeof binding.SendWrap !== 'function') return undefined;
    return { handle: handle as UdpHandle, SendWrap: binding.SendWrap };
  } catch {
    return undefined;
  }
}
