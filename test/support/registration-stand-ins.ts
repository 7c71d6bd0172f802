/**
 * Stand-ins for the internet's registration services, on loopback: an RDAP server (RFC 9083 JSON over
 * HTTP, RFC 7480) that also serves an IANA-style bootstrap file (RFC 9224) pointing at itself, IANA's
 * WHOIS (RFC 3912 over TCP) that refers TLDs to a registry, and that registry's WHOIS server. Each
 * counts what it was asked; the RDAP stand-in can be told to answer 429 with Retry-After.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';

export interface RdapStandIn {
  url: string;
  bootstrapUrl: string;
  /** Requests by path, and when each came (ms since the epoch). */
  requests: { path: string; at: number }[];
  /** Domain objects by name. */
  domains: Map<string, object>;
  /** While set, domain queries get 429 with this Retry-After value. */
  retryAfter?: string;
  close(): Promise<void>;
}

/** An RFC 9083 domain object as a registry would send it. */
export function rdapDomain(
  name: string,
  fields: { registrar: string; expires: string; abuse: string },
): object {
  return {
    objectClassName: 'domain',
    rdapConformance: ['rdap_level_0'],
    ldhName: name,
    status: ['client transfer prohibited', 'active'],
    events: [
      { eventAction: 'registration', eventDate: '2019-03-04T05:06:07Z' },
      { eventAction: 'last changed', eventDate: '2026-02-03T04:05:06Z' },
      { eventAction: 'expiration', eventDate: fields.expires },
    ],
    secureDNS: { delegationSigned: true },
    nameservers: [
      { objectClassName: 'nameserver', ldhName: 'NS1.PROVIDER.TEST' },
      { objectClassName: 'nameserver', ldhName: 'ns2.provider.test' },
    ],
    entities: [
      {
        objectClassName: 'entity',
        roles: ['registrar'],
        vcardArray: [
          'vcard',
          [
            ['version', {}, 'text', '4.0'],
            ['fn', {}, 'text', fields.registrar],
          ],
        ],
        entities: [
          {
            objectClassName: 'entity',
            roles: ['abuse'],
            vcardArray: [
              'vcard',
              [
                ['version', {}, 'text', '4.0'],
                ['email', {}, 'text', fields.abuse],
                ['tel', { type: 'voice' }, 'uri', 'tel:+1.5555550100'],
              ],
            ],
          },
        ],
      },
    ],
  };
}

export async function startRdapStandIn(tlds: string[]): Promise<RdapStandIn> {
  const stand: RdapStandIn = {
    url: '',
    bootstrapUrl: '',
    requests: [],
    domains: new Map(),
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    stand.requests.push({ path, at: Date.now() });
    if (path === '/bootstrap/dns.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          version: '1.0',
          publication: '2026-11-01T00:00:00Z',
          description: 'stand-in for https://data.iana.org/rdap/dns.json',
          services: [[tlds, [`${stand.url}/rdap/`]]],
        }),
      );
      return;
    }
    const m = /^\/rdap\/domain\/([^/?]+)$/.exec(path);
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    if (stand.retryAfter !== undefined) {
      res
        .writeHead(429, { 'retry-after': stand.retryAfter, 'content-type': 'application/rdap+json' })
        .end('{}');
      return;
    }
    const found = stand.domains.get(m[1]!.toLowerCase());
    if (!found) {
      res
        .writeHead(404, { 'content-type': 'application/rdap+json' })
        .end(JSON.stringify({ errorCode: 404, title: 'Not Found' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/rdap+json' }).end(JSON.stringify(found));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stand.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stand.bootstrapUrl = `${stand.url}/bootstrap/dns.json`;
  stand.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return stand;
}

export interface WhoisStandIn {
  port: number;
  queries: string[];
  close(): Promise<void>;
}

/** A WHOIS server on 127.0.0.1 answering each query line with `answer(query)`, then closing. */
export async function startWhoisStandIn(answer: (query: string) => string): Promise<WhoisStandIn> {
  const queries: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    socket.on('data', (d) => {
      buffered += d.toString('utf8');
      const end = buffered.indexOf('\r\n');
      if (end < 0) return;
      const query = buffered.slice(0, end).trim();
      queries.push(query);
      socket.end(answer(query));
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    queries,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** IANA's WHOIS answer for a TLD, referring to `registry`. */
export function ianaReferral(tld: string, registry: string): string {
  return [
    '% IANA WHOIS server (stand-in)',
    '',
    `domain:       ${tld.toUpperCase()}`,
    'organisation: Stand-in Registry Services',
    `refer:        ${registry}`,
    `whois:        ${registry}`,
    'status:       ACTIVE',
    '',
  ].join('\r\n');
}

/** A registry's WHOIS answer in ICANN's key-value form. */
export function registryWhois(name: string, fields: { registrar: string; expires: string }): string {
  return [
    `Domain Name: ${name.toUpperCase()}`,
    'Registry Domain ID: 12345_DOMAIN_LEGACY-VRSN',
    'Registrar WHOIS Server: whois.registrar.legacy',
    'Updated Date: 2026-01-02T03:04:05Z',
    'Creation Date: 2010-05-06T07:08:09Z',
    `Registry Expiry Date: ${fields.expires}`,
    `Registrar: ${fields.registrar}`,
    'Registrar Abuse Contact Email: abuse@registrar.legacy',
    'Registrar Abuse Contact Phone: +1.5555550199',
    'Domain Status: clientDeleteProhibited https://icann.org/epp#clientDeleteProhibited',
    'Domain Status: clientTransferProhibited https://icann.org/epp#clientTransferProhibited',
    'Name Server: NS1.LEGACY-DNS.LEGACY',
    'Name Server: NS2.LEGACY-DNS.LEGACY',
    'DNSSEC: unsigned',
    '>>> Last update of whois database: 2026-11-26T00:00:00Z <<<',
    '',
  ].join('\r\n');
}
