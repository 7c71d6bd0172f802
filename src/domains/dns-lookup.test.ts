/**
 * DnsLookup's delegation look-up against a parent zone whose NS RRset names many servers (a parent
 * zone a tenant runs may name as many as it likes): a small UDP resolver on loopback answers.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { decodeMessage, encodeMessage, queryMessage } from '../dns/message.ts';
import { nameEquals } from '../dns/name.ts';
import { RRType } from '../dns/rrtype.ts';
import { DnsLookup, MAX_DELEGATION_QUERIES, MAX_DELEGATION_SERVERS } from './dns-lookup.ts';

test('a delegation look-up asks for the addresses of a few of the parent zone’s servers, however many it names', async () => {
  const servers = Array.from({ length: 40 }, (_, i) => `ns${String(i).padStart(2, '0')}.tenant.test.`);
  let addressQueries = 0;
  const socket = dgram.createSocket('udp4');
  socket.on('message', (data, from) => {
    const q = decodeMessage(data);
    const question = q.questions[0]!;
    const reply = queryMessage(question.name, question.type, { id: q.id, qr: true, rd: q.rd, ra: true });
    if (question.type === RRType.NS && nameEquals(question.name, 'tenant.test.'))
      reply.answers = servers.map((host) => ({
        name: 'tenant.test.',
        type: RRType.NS,
        class: 1,
        ttl: 60,
        data: { type: 'NS', host },
      }));
    else if (question.type === RRType.A || question.type === RRType.AAAA)
      addressQueries++; // no address
    else reply.rcode = 3; // NXDOMAIN for the other NS look-ups
    socket.send(encodeMessage(reply), from.port, from.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  try {
    const lookup = new DnsLookup({ resolver: `127.0.0.1:${(socket.address() as AddressInfo).port}` });
    await assert.rejects(lookup.delegation('sub.tenant.test'), /DELEGATION_QUERY_LIMIT/);
    // A and AAAA per server looked at, not per server named.
    assert.equal(addressQueries, 2 * MAX_DELEGATION_SERVERS);
    assert.ok(MAX_DELEGATION_QUERIES <= MAX_DELEGATION_SERVERS);
  } finally {
    socket.close();
  }
});
