import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Answers many queries in a child process with V8's GC trace on, and returns the bytes each young
 * generation collection (scavenge) promoted to the old generation, in order.
 */
async function promotedPerScavenge(queries: number): Promise<number[]> {
  const dir = import.meta.dirname;
  const script = `
    import { encodeMessage, queryMessage } from ${JSON.stringify(path.join(dir, '../dns/message.ts'))};
    import { QueryHandler } from ${JSON.stringify(path.join(dir, 'query-handler.ts'))};
    import { ZoneSnapshot } from ${JSON.stringify(path.join(dir, 'zone-snapshot.ts'))};
    import { ZoneTable } from ${JSON.stringify(path.join(dir, 'zone-table.ts'))};
    const soa = { ttl: 300, mname: 'ns1.example.com.', rname: 'h.example.com.', refresh: 1, retry: 1, expire: 1, minimum: 60 };
    const rrsets = [];
    for (let i = 0; i < 200; i++) {
      rrsets.push({ owner: 'h' + i + '.example.com.', type: 'MX', ttl: 300, rdata: [{ type: 'MX', preference: 10, exchange: 'mail' + i + '.example.com.' }] });
      rrsets.push({ owner: 'mail' + i + '.example.com.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.1' }] });
    }
    const table = new ZoneTable();
    table.set(ZoneSnapshot.build('example.com.', soa, 1, rrsets));
    // The cache off: every query is encoded.
    const handler = new QueryHandler({ table, responseCache: 0 });
    const packets = [];
    for (let i = 0; i < 400; i++) {
      const name = i % 4 === 3 ? 'missing' + i + '.example.com.' : 'h' + (i % 200) + '.example.com.';
      packets.push(encodeMessage(queryMessage(name, 15, { id: i })));
    }
    // A long-lived server: after its first answers, what the handler keeps has reached the old
    // generation (young collections run meanwhile, here forced by allocating).
    for (let n = 0; n < 100; n++) handler.handle(packets[n % packets.length], 'udp');
    let junk;
    for (let i = 0; i < 4_000_000; i++) junk = { i };
    for (let n = 0; n < ${queries}; n++) handler.handle(packets[n % packets.length], 'udp');
  `;
  const { stdout } = await run(process.execPath, ['--trace-gc-nvp', '--input-type=module', '-e', script], {
    maxBuffer: 64 << 20,
  });
  return stdout
    .split('\n')
    .filter((line) => / gc=s /.test(line))
    .map((line) => Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0));
}

test('answering queries promotes nothing to the old generation: per-query garbage dies young', async () => {
  // Regression: the response writer kept its name-compression Map and cleared it for each message;
  // V8 links a cleared Map's old table to its new one, so once one table reached the old generation
  // every later table and the name strings in it survived young collections and were promoted. Under
  // a long fuzz run this filled the old generation with garbage at ~1 MB/s and grew the young
  // generation too: the server's RSS grew by 150 MB in two minutes.
  const promoted = await promotedPerScavenge(400_000);
  const steady = promoted.slice(Math.min(10, promoted.length >> 1));
  assert.ok(steady.length >= 5, `${promoted.length} scavenges`);
  const average = steady.reduce((a, b) => a + b, 0) / steady.length;
  assert.ok(
    average < 32 * 1024,
    `${Math.round(average / 1024)} KB promoted per scavenge (${steady.map((p) => Math.round(p / 1024)).join(' ')})`,
  );
});
