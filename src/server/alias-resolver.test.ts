import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { decodeMessage, encodeMessage, type Message } from '../dns/message.ts';
import { parseName } from '../dns/name.ts';
import { RRType } from '../dns/rrtype.ts';
import { POSITIVE_TTL_CAP, ZoneAliasResolver } from './alias-resolver.ts';
import { ZoneTable } from './zone-table.ts';

const TARGET = parseName('target.example.net.');
const REAL = '192.0.2.10';
const FORGED = '203.0.113.66';

/** A response to `query` with one A record for `name`. */
function answer(query: Message, address: string, options: { name?: string; ttl?: number } = {}): Uint8Array {
  const question = query.questions[0]!;
  return encodeMessage({
    ...query,
    qr: true,
    ra: true,
    questions: options.name ? [{ ...question, name: parseName(options.name) }] : query.questions,
    answers: [
      {
        name: options.name ? parseName(options.name) : question.name,
        type: RRType.A,
        class: 1,
        ttl: options.ttl ?? 300,
        data: { type: 'A', address },
      },
    ] as Message['answers'],
    authority: [],
    additional: [],
  });
}

/**
 * A resolver stand-in on loopback; `reply` decides what it (and an attacker's socket on another port)
 * sends for each query.
 */
describe('ALIAS targets asked of the upstream resolver: only its answers to the question asked are taken', () => {
  let upstream: dgram.Socket;
  let attacker: dgram.Socket;
  let port: number;
  let reply: (query: Message, to: dgram.RemoteInfo) => void = () => {};
  let queries = 0;

  before(async () => {
    upstream = dgram.createSocket('udp4');
    attacker = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => upstream.bind(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => attacker.bind(0, '127.0.0.1', resolve));
    port = upstream.address().port;
    upstream.on('message', (msg, rinfo) => {
      queries++;
      reply(decodeMessage(msg), rinfo);
    });
  });
  after(() => {
    upstream.close();
    attacker.close();
  });

  const resolverWith = (now?: () => number) =>
    new ZoneAliasResolver({
      upstream: `127.0.0.1:${port}`,
      table: new ZoneTable(),
      timeoutMs: 2000,
      ...(now ? { now } : {}),
    });

  test('an answer from another port with the right ID is dropped (RFC 5452 §4.3)', async () => {
    reply = (query, to) => {
      // The forgery arrives first, from the same host but not the resolver's port.
      attacker.send(answer(query, FORGED, { ttl: 0x7fffffff }), to.port, to.address, () => {
        setTimeout(() => upstream.send(answer(query, REAL), to.port, to.address), 20);
      });
    };
    const result = await resolverWith().resolve(TARGET, RRType.A);
    assert.equal(result.kind, 'ok');
    assert.deepEqual(result.kind === 'ok' ? result.rdata : [], [{ type: 'A', address: REAL }]);
  });

  test('an answer with the right ID and source but another question is dropped (RFC 5452 §9.1)', async () => {
    reply = (query, to) => {
      upstream.send(answer(query, FORGED, { name: 'attacker.invalid.' }), to.port, to.address, () => {
        setTimeout(() => upstream.send(answer(query, REAL), to.port, to.address), 20);
      });
    };
    const result = await resolverWith().resolve(TARGET, RRType.A);
    assert.deepEqual(result.kind === 'ok' ? result.rdata : result, [{ type: 'A', address: REAL }]);
  });

  test('an upstream TTL is kept at most an hour, and one with its top bit set counts as 0 (RFC 2181 §8)', async () => {
    let now = 1_000_000;
    const resolver = resolverWith(() => now);
    reply = (query, to) => upstream.send(answer(query, REAL, { ttl: 7 * 86400 }), to.port, to.address);
    const first = await resolver.resolve(TARGET, RRType.A);
    assert.equal(first.kind === 'ok' ? first.ttl : -1, POSITIVE_TTL_CAP);
    const asked = queries;
    now += (POSITIVE_TTL_CAP - 1) * 1000;
    await resolver.resolve(TARGET, RRType.A);
    assert.equal(queries, asked, 'cached within the hour');
    now += 2000;
    await resolver.resolve(TARGET, RRType.A);
    assert.equal(queries, asked + 1, 'asked again after the hour');
    reply = (query, to) => upstream.send(answer(query, REAL, { ttl: 0x80000000 }), to.port, to.address);
    const top = await resolverWith(() => now).resolve(parseName('other.example.net.'), RRType.A);
    assert.equal(top.kind === 'ok' ? top.ttl : -1, 0);
  });
});
