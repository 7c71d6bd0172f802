/**
 * Splits `host:port`, `[ipv6]:port`, a bare host or a bare IPv6 address (more than one colon, no
 * brackets) into host and port; a missing port is `defaultPort`. The port is not checked: callers
 * that take it from configuration check its range.
 */
export function splitHostPort(hostPort: string, defaultPort = 53): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostPort);
  if (bracketed) return { host: bracketed[1]!, port: bracketed[2] ? Number(bracketed[2]) : defaultPort };
  const colon = hostPort.lastIndexOf(':');
  if (colon > 0 && hostPort.indexOf(':') === colon) {
    return { host: hostPort.slice(0, colon), port: Number(hostPort.slice(colon + 1)) };
  }
  return { host: hostPort, port: defaultPort };
}
