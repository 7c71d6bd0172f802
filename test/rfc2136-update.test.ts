/**
 * RFC 2136 UPDATE into `zonekeeper serve`, driven by the real clients: BIND's `nsupdate` and Knot's
 * `knsupdate`. Every prerequisite and update form, the refusals (keys, names, types, a manifest's
 * RRset, an unsigned or replayed message, an update key asking for AXFR, another zone's key),
 * atomicity, one serial per message (IXFR shows one change), durability across a restart, NOTIFY and
 * IXFR to a Knot secondary, and UPDATE through `serve --workers`.
 *
 *   npx node --test test/rfc2136-update.test.ts     # about 30 s
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { encodeMessage, Opcode } from '../src/dns/message.ts';
import { parseRdata } from '../src/dns/rdata.ts';
import { RRClass, RRType } from '../src/dns/rrtype.ts';
import { parseTsigKey, readTsig, signMessage } from '../src/dns/tsig.ts';
import { dig } from './support/dig.ts';
import { exchange } from './support/dns-client.ts';
import { freePorts, type Secondary, startSecondary, type TsigKeyConfig } from './support/secondaries.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);

const key = (name: string): TsigKeyConfig => ({
  name,
  algorithm: 'hmac-sha256',
  secret: randomBytes(32).toString('base64'),
});
const TRANSFER = key('transfer-key');
const DYN = key('dyn-key');
const ACME = key('acme-key');
const OTHER = key('other-key');
const KEYS = [TRANSFER, DYN, ACME, OTHER];

function manifests(dir: string, notifyPort: number): string {
  const keyLine = (k: TsigKeyConfig, usage?: string) =>
    `      - { name: ${k.name}, algorithm: ${k.algorithm}, secretRef: { file: ${JSON.stringify(path.join(dir, `${k.name}.key`))} }${usage ? `, usage: ${usage}` : ''} }`;
  const record = (
    ns: string,
    zone: string,
    name: string,
    owner: string,
    type: string,
    records: string[],
  ) => `---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ${name}, namespace: ${ns} }
spec:
  zoneRef: { name: ${zone} }
  name: "${owner}"
  type: ${type}
  records: ${JSON.stringify(records)}
`;
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.com.]
  defaults:
    ttl: 300
    soa: { refresh: 3600, retry: 600 }
  transfers:
    allowFrom: [127.0.0.1/32]
    tsigKeys:
${keyLine(TRANSFER)}
${keyLine(DYN, '[update]')}
${keyLine(ACME, '[update]')}
${keyLine(OTHER, '[update]')}
    notify:
      - { address: "127.0.0.1:${notifyPort}", tsigKey: ${TRANSFER.name} }
    journalSize: 20
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec:
  domainName: example.com
  className: builtin
  updatePolicy:
    - { key: ${DYN.name}, names: ["*.dyn", host], types: [A, AAAA, TXT, CNAME, MX] }
    - { key: ${ACME.name}, names: ["_acme-challenge.**"], types: [TXT] }
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: other-org, namespace: other }
spec:
  domainName: other.org
  className: builtin
  updatePolicy:
    - { key: ${OTHER.name}, names: ["*"], types: [A] }
${record('dns', 'example-com', 'ns1', 'ns1', 'A', ['192.0.2.53'])}${record('dns', 'example-com', 'www', 'www', 'A', ['192.0.2.80'])}${record('dns', 'example-com', 'manifest-dyn', 'manifest.dyn', 'A', ['192.0.2.99'])}`;
}

interface ToolResult {
  code: number;
  out: string;
}

/** Runs `nsupdate` (BIND) or `knsupdate` (Knot) with a script on stdin, signed with `k` unless null. */
function nsupdate(
  port: number,
  k: TsigKeyConfig | null,
  lines: string[],
  options: { tool?: 'nsupdate' | 'knsupdate'; tcp?: boolean; zone?: string } = {},
): Promise<ToolResult> {
  const tool = options.tool ?? 'nsupdate';
  const args = options.tcp ? ['-v'] : []; // both tools: -v is TCP
  if (k) args.push('-y', `${k.algorithm}:${k.name}:${k.secret}`);
  const script = [
    ...(tool === 'nsupdate' ? ['check-names no'] : []),
    `server 127.0.0.1 ${port}`,
    `zone ${options.zone ?? 'example.com.'}`,
    ...lines,
    'send',
    ...(tool === 'knsupdate' ? ['answer', 'quit'] : []),
    '',
  ].join('\n');
  return new Promise((resolve) => {
    const child = spawn(tool, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, out });
    });
    child.stdin.end(script);
  });
}

/** A signed message with its TSIG MAC cut to its first `n` octets (the MAC size field set to `n`). */
function truncatedMac(signed: Uint8Array, n: number): Uint8Array {
  const found = readTsig(signed)!;
  const rr = signed.subarray(found.start);
  let o = 0;
  while (rr[o] !== 0) o += rr[o]! + 1;
  o += 1; // owner name; TYPE, CLASS, TTL, RDLENGTH follow
  const rdStart = o + 10;
  let a = rdStart;
  while (rr[a] !== 0) a += rr[a]! + 1;
  a += 1; // algorithm name; time signed (6), fudge (2), MAC size (2) follow
  const macSizeAt = a + 8;
  const size = (rr[macSizeAt]! << 8) | rr[macSizeAt + 1]!;
  const out = Buffer.concat([
    signed.subarray(0, found.start),
    rr.subarray(0, macSizeAt),
    Buffer.from([0, n]),
    found.record.mac.subarray(0, n),
    rr.subarray(macSizeAt + 2 + size),
  ]);
  out.writeUInt16BE(out.length - found.start - rdStart, found.start + o + 8);
  return out;
}

/** The failure rcode nsupdate or knsupdate reports, or NOERROR. */
function rcodeOf(r: ToolResult): string {
  const status = /status: ([A-Z]+)/.exec(r.out)?.[1];
  if (status) return status;
  if (r.code === 0 && !/failed|refused/i.test(r.out)) return 'NOERROR';
  const m =
    /(NOTZONE|NXRRSET|YXRRSET|YXDOMAIN|NXDOMAIN|REFUSED|NOTAUTH|FORMERR|SERVFAIL|BADKEY|BADSIG|BADTIME)/.exec(
      r.out,
    );
  return m ? m[1]! : `failed: ${r.out}`;
}

async function answer(port: number, name: string, type: string): Promise<string[]> {
  const r = await dig(port, name, type);
  return r.answer
    .filter((l) => l.split(' ')[3] === type)
    .map((l) => l.split(' ').slice(4).join(' '))
    .sort();
}

async function serial(port: number, zone = 'example.com.'): Promise<number> {
  const r = await dig(port, zone, 'SOA');
  return Number(r.answer[0]!.split(' ')[6]);
}

/** Write access for `serve`: no credentials of its own, a rate the tests' bursts of UPDATEs fit in. */
const ACCESS = 'credentials: []\ndefaultQuota: { requestsPerSecond: 100, burst: 200 }\n';

describe('RFC 2136 UPDATE into zonekeeper serve', () => {
  let dir: string;
  let stateDir: string;
  let serve: ServeProcess;
  let secondary: Secondary;
  let notifyPort: number;

  before(async () => {
    dir = await tempDir('rfc2136');
    stateDir = await tempDir('rfc2136-state');
    for (const k of KEYS) await writeFile(path.join(dir, `${k.name}.key`), k.secret);
    notifyPort = (await freePorts(1))[0]!;
    const manifestDir = path.join(dir, 'manifests');
    await run('mkdir', ['-p', manifestDir]);
    await writeFile(path.join(manifestDir, 'zones.yaml'), manifests(dir, notifyPort));
    // Every signed UPDATE, refused ones included, takes one request of the namespace's rate: the
    // tests send many at once, more than the default burst (20).
    await writeFile(path.join(dir, 'access.yaml'), ACCESS);
    serve = await startServe(manifestDir, stateDir, ['--write-access', path.join(dir, 'access.yaml')]);
    secondary = await startSecondary({
      kind: 'knot',
      zone: 'example.com.',
      primaryPort: serve.dnsPort,
      key: TRANSFER,
      port: notifyPort,
    });
  });

  after(async () => {
    await secondary?.close();
    await serve?.stop();
    await removeAll(dir, stateDir);
  });

  test('add, over UDP and TCP, served at once and by one serial per message', async () => {
    const before = await serial(serve.dnsPort);
    const r = await nsupdate(serve.dnsPort, DYN, [
      'update add a.dyn.example.com. 60 A 192.0.2.10',
      'update add a.dyn.example.com. 60 A 192.0.2.11',
      'update add b.dyn.example.com. 120 TXT "hello world"',
    ]);
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    assert.deepEqual(await answer(serve.dnsPort, 'a.dyn.example.com.', 'A'), ['192.0.2.10', '192.0.2.11']);
    assert.deepEqual(await answer(serve.dnsPort, 'b.dyn.example.com.', 'TXT'), ['"hello world"']);
    const after = await serial(serve.dnsPort);
    assert.ok(after > before);
    // IXFR from the serial before: exactly one change (old SOA, deletions, new SOA, additions).
    const ixfr = await dig(serve.dnsPort, 'example.com.', `IXFR=${before}`, {
      args: ['-y', `${TRANSFER.algorithm}:${TRANSFER.name}:${TRANSFER.secret}`],
    });
    const soas = ixfr.raw
      .split('\n')
      .map((l) => l.split(/\s+/))
      .filter((f) => f[3] === 'SOA')
      .map((f) => Number(f[6]));
    assert.deepEqual(soas, [after, before, after, after], ixfr.raw);

    const t = await nsupdate(serve.dnsPort, DYN, ['update add tcp.dyn.example.com. 60 AAAA 2001:db8::10'], {
      tcp: true,
    });
    assert.equal(rcodeOf(t), 'NOERROR', t.out);
    assert.deepEqual(await answer(serve.dnsPort, 'tcp.dyn.example.com.', 'AAAA'), ['2001:db8::10']);
  });

  test('every prerequisite form (RFC 2136 §2.4), with its rcode', async () => {
    const p = serve.dnsPort;
    const cases: [string, string][] = [
      ['prereq yxdomain a.dyn.example.com.', 'NOERROR'],
      ['prereq yxdomain none.dyn.example.com.', 'NXDOMAIN'],
      ['prereq nxdomain none.dyn.example.com.', 'NOERROR'],
      ['prereq nxdomain a.dyn.example.com.', 'YXDOMAIN'],
      ['prereq yxrrset a.dyn.example.com. A', 'NOERROR'],
      ['prereq yxrrset a.dyn.example.com. MX', 'NXRRSET'],
      ['prereq nxrrset a.dyn.example.com. MX', 'NOERROR'],
      ['prereq nxrrset a.dyn.example.com. A', 'YXRRSET'],
      [
        'prereq yxrrset a.dyn.example.com. A 192.0.2.10\nprereq yxrrset a.dyn.example.com. A 192.0.2.11',
        'NOERROR',
      ],
      ['prereq yxrrset a.dyn.example.com. A 192.0.2.10', 'NXRRSET'],
      ['prereq yxrrset www.elsewhere.org. A', 'NOTZONE'],
    ];
    for (const [line, expected] of cases) {
      const r = await nsupdate(p, DYN, [...line.split('\n'), 'update add p.dyn.example.com. 60 TXT "p"']);
      assert.equal(rcodeOf(r), expected, `${line}: ${r.out}`);
      // The update rides on the prerequisite: applied exactly when it holds, then taken away again.
      const present = (await answer(p, 'p.dyn.example.com.', 'TXT')).length > 0;
      assert.equal(present, expected === 'NOERROR', line);
      if (present)
        assert.equal(rcodeOf(await nsupdate(p, DYN, ['update delete p.dyn.example.com. TXT'])), 'NOERROR');
    }
  });

  test('every update form (RFC 2136 §2.5): add, delete RRset, delete a name, delete one RR', async () => {
    const p = serve.dnsPort;
    let r = await nsupdate(p, DYN, [
      'update add c.dyn.example.com. 60 A 192.0.2.1',
      'update add c.dyn.example.com. 60 A 192.0.2.2',
      'update add c.dyn.example.com. 60 TXT "c"',
      'update add c.dyn.example.com. 60 MX 10 mail.example.com.',
    ]);
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    r = await nsupdate(p, DYN, ['update delete c.dyn.example.com. A 192.0.2.1']);
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    assert.deepEqual(await answer(p, 'c.dyn.example.com.', 'A'), ['192.0.2.2']);
    r = await nsupdate(p, DYN, ['update delete c.dyn.example.com. TXT']);
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    assert.deepEqual(await answer(p, 'c.dyn.example.com.', 'TXT'), []);
    assert.deepEqual(await answer(p, 'c.dyn.example.com.', 'MX'), ['10 mail.example.com.']);
    r = await nsupdate(p, DYN, ['update delete c.dyn.example.com.']);
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    assert.equal((await dig(p, 'c.dyn.example.com.', 'A')).status, 'NXDOMAIN');
  });

  test('CNAME exclusivity: an add that would mix CNAME and other data is ignored (§3.4.2.2)', async () => {
    const p = serve.dnsPort;
    assert.equal(
      rcodeOf(await nsupdate(p, DYN, ['update add cn.dyn.example.com. 60 CNAME www.example.com.'])),
      'NOERROR',
    );
    assert.equal(
      rcodeOf(await nsupdate(p, DYN, ['update add cn.dyn.example.com. 60 A 192.0.2.7'])),
      'NOERROR',
    );
    assert.deepEqual(await answer(p, 'cn.dyn.example.com.', 'CNAME'), ['www.example.com.']);
    assert.deepEqual(await answer(p, 'cn.dyn.example.com.', 'TXT'), []);
  });

  test('atomicity: a failing prerequisite changes nothing', async () => {
    const p = serve.dnsPort;
    const before = await serial(p);
    const r = await nsupdate(p, DYN, [
      'prereq nxrrset a.dyn.example.com. A',
      'update add atomic1.dyn.example.com. 60 A 192.0.2.1',
      'update delete a.dyn.example.com. A',
    ]);
    assert.equal(rcodeOf(r), 'YXRRSET');
    assert.deepEqual(await answer(p, 'atomic1.dyn.example.com.', 'A'), []);
    assert.deepEqual(await answer(p, 'a.dyn.example.com.', 'A'), ['192.0.2.10', '192.0.2.11']);
    // A message whose second update is refused applies none of it either.
    const r2 = await nsupdate(p, DYN, [
      'update add atomic2.dyn.example.com. 60 A 192.0.2.1',
      'update add manifest.dyn.example.com. 60 A 192.0.2.66',
    ]);
    assert.equal(rcodeOf(r2), 'REFUSED', r2.out);
    assert.deepEqual(await answer(p, 'atomic2.dyn.example.com.', 'A'), []);
    assert.equal(await serial(p), before);
  });

  test('refused: names, types, keys and zones the policy does not grant, a manifest RRset, unsigned', async () => {
    const p = serve.dnsPort;
    const expectRefused = async (k: TsigKeyConfig | null, line: string, zone?: string) => {
      const r = await nsupdate(p, k, [line], zone ? { zone } : {});
      assert.notEqual(rcodeOf(r), 'NOERROR', `${line} with ${k?.name ?? 'no key'}: ${r.out}`);
      return rcodeOf(r);
    };
    // A name outside the key's names; a type outside its types.
    assert.equal(await expectRefused(DYN, 'update add www.example.com. 60 A 192.0.2.66'), 'REFUSED');
    assert.equal(
      await expectRefused(ACME, 'update add _acme-challenge.www.example.com. 60 A 192.0.2.1'),
      'REFUSED',
    );
    assert.equal(await expectRefused(ACME, 'update add www.example.com. 60 TXT "x"'), 'REFUSED');
    // The manifest's RRset under a granted name: neither overwritten nor deleted.
    assert.equal(await expectRefused(DYN, 'update add manifest.dyn.example.com. 60 A 192.0.2.66'), 'REFUSED');
    assert.equal(await expectRefused(DYN, 'update delete manifest.dyn.example.com. A'), 'REFUSED');
    assert.deepEqual(await answer(p, 'manifest.dyn.example.com.', 'A'), ['192.0.2.99']);
    // The zone's apex NS and SOA come from the DNSZone and its class.
    assert.equal(await expectRefused(DYN, 'update add example.com. 60 NS evil.example.net.'), 'REFUSED');
    // Another zone's key; the transfer key; no key at all.
    assert.equal(await expectRefused(OTHER, 'update add x.dyn.example.com. 60 A 192.0.2.1'), 'REFUSED');
    assert.notEqual(await expectRefused(TRANSFER, 'update add x.dyn.example.com. 60 A 192.0.2.1'), 'NOERROR');
    assert.equal(await expectRefused(null, 'update add x.dyn.example.com. 60 A 192.0.2.1'), 'REFUSED');
    // A key for example.com cannot write into other.org, nor through example.com's zone section.
    assert.notEqual(
      await expectRefused(DYN, 'update add x.other.org. 60 A 192.0.2.1', 'other.org.'),
      'NOERROR',
    );
    assert.equal(await expectRefused(DYN, 'update add x.other.org. 60 A 192.0.2.1'), 'NOTZONE');
    assert.deepEqual(await answer(p, 'x.other.org.', 'A'), []);
    assert.deepEqual(await answer(p, 'x.dyn.example.com.', 'A'), []);
    // other.org's own key does write there.
    const ok = await nsupdate(p, OTHER, ['update add x.other.org. 60 A 192.0.2.1'], { zone: 'other.org.' });
    assert.equal(rcodeOf(ok), 'NOERROR', ok.out);
  });

  test('_acme-challenge.** grants that label under any name, the apex included', async () => {
    const p = serve.dnsPort;
    for (const name of ['_acme-challenge.example.com.', '_acme-challenge.www.example.com.']) {
      const r = await nsupdate(p, ACME, [`update add ${name} 60 TXT "token-${name.length}"`]);
      assert.equal(rcodeOf(r), 'NOERROR', r.out);
      assert.deepEqual(await answer(p, name, 'TXT'), [`"token-${name.length}"`]);
    }
  });

  test('an update key does not transfer the zone', async () => {
    const axfr = await dig(serve.dnsPort, 'example.com.', 'AXFR', {
      args: ['-y', `${ACME.algorithm}:${ACME.name}:${ACME.secret}`],
    });
    assert.equal(axfr.answer.length, 0, axfr.raw);
    assert.match(axfr.raw, /NOTAUTH|BADKEY|failed|refused/i);
  });

  test('a replayed signed UPDATE is refused; one signed outside the time window too', async () => {
    const p = serve.dnsPort;
    const build = (id: number) =>
      encodeMessage({
        id,
        qr: false,
        opcode: Opcode.UPDATE,
        aa: false,
        tc: false,
        rd: false,
        ra: false,
        ad: false,
        cd: false,
        rcode: 0,
        questions: [{ name: 'example.com.', type: RRType.SOA, class: RRClass.IN }],
        answers: [],
        authority: [
          {
            name: 'replay.dyn.example.com.',
            type: RRType.TXT,
            class: RRClass.IN,
            ttl: 60,
            data: parseRdata('TXT', `"${id}"`, 'example.com.'),
          },
        ],
        additional: [],
      });
    const dyn = parseTsigKey(DYN);
    const signed = signMessage(build(4242), dyn).bytes;
    const first = await exchange(p, signed);
    assert.equal(first.message?.rcode, 0);
    // The record is deleted, then the first message replayed: it must not come back.
    assert.equal(rcodeOf(await nsupdate(p, DYN, ['update delete replay.dyn.example.com. TXT'])), 'NOERROR');
    const replay = await exchange(p, signed);
    assert.equal(replay.message?.rcode, 5); // REFUSED
    assert.deepEqual(await answer(p, 'replay.dyn.example.com.', 'TXT'), []);
    // The MAC's length is not signed: a copy with the MAC cut short (RFC 8945 §5.2.2.1 allows down to
    // 16 octets for SHA-256) verifies, so UPDATE requires the full MAC (BADTRUNC) and remembers what
    // was signed, not the MAC's bytes; a copy with another header ID is the same message.
    for (const n of [31, 24, 16]) {
      const cut = await exchange(p, truncatedMac(signed, n));
      assert.equal(cut.message?.rcode, 9, `MAC cut to ${n} octets`); // NOTAUTH (BADTRUNC)
    }
    const otherId = Buffer.from(signed);
    otherId.writeUInt16BE(4244, 0);
    assert.equal((await exchange(p, otherId)).message?.rcode, 5); // REFUSED
    assert.deepEqual(await answer(p, 'replay.dyn.example.com.', 'TXT'), []);
    const old = signMessage(build(4243), dyn, { time: Math.floor(Date.now() / 1000) - 3600 }).bytes;
    const late = await exchange(p, old);
    assert.equal(late.message?.rcode, 9); // NOTAUTH (BADTIME)
    assert.deepEqual(await answer(p, 'replay.dyn.example.com.', 'TXT'), []);
  });

  test('knsupdate (Knot): prerequisites and updates', async () => {
    const p = serve.dnsPort;
    let r = await nsupdate(
      p,
      DYN,
      ['prereq nxdomain k.dyn.example.com.', 'update add k.dyn.example.com. 60 A 192.0.2.44'],
      { tool: 'knsupdate' },
    );
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    assert.deepEqual(await answer(p, 'k.dyn.example.com.', 'A'), ['192.0.2.44']);
    r = await nsupdate(
      p,
      DYN,
      ['prereq nxdomain k.dyn.example.com.', 'update add k.dyn.example.com. 60 A 192.0.2.45'],
      {
        tool: 'knsupdate',
      },
    );
    assert.equal(rcodeOf(r), 'YXDOMAIN', r.out);
    r = await nsupdate(
      p,
      DYN,
      [
        'prereq yxrrset k.dyn.example.com. A 192.0.2.44',
        'update delete k.dyn.example.com. A 192.0.2.44',
        'update add k.dyn.example.com. 60 A 192.0.2.46',
      ],
      { tool: 'knsupdate', tcp: true },
    );
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    assert.deepEqual(await answer(p, 'k.dyn.example.com.', 'A'), ['192.0.2.46']);
    r = await nsupdate(p, ACME, ['update add k.dyn.example.com. 60 A 192.0.2.47'], { tool: 'knsupdate' });
    assert.equal(rcodeOf(r), 'REFUSED', r.out);
  });

  test('the Knot secondary gets the updates by NOTIFY and IXFR', async () => {
    const p = serve.dnsPort;
    const r = await nsupdate(p, DYN, ['update add sec.dyn.example.com. 60 A 192.0.2.77']);
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    const want = await serial(p);
    // SOA refresh is 3600 s: only NOTIFY explains the secondary catching up now.
    await waitFor(async () => ((await secondary.soaSerial()) === want ? true : undefined), 15_000);
    assert.deepEqual(await secondary.answer('sec.dyn.example.com.', 'A'), ['192.0.2.77']);
    assert.match(secondary.log(), /IXFR/i);
  });

  test('updates are durable across a restart', async () => {
    const manifestDir = path.join(dir, 'manifests');
    await serve.stop();
    serve = await startServe(manifestDir, stateDir, ['--write-access', path.join(dir, 'access.yaml')]);
    assert.deepEqual(
      await answer(serve.dnsPort, 'a.dyn.example.com.', 'A'),
      ['192.0.2.10', '192.0.2.11'],
      serve.log(),
    );
    assert.deepEqual(await answer(serve.dnsPort, 'k.dyn.example.com.', 'A'), ['192.0.2.46']);
    assert.deepEqual(await answer(serve.dnsPort, 'x.other.org.', 'A'), ['192.0.2.1']);
    // And they are still the key's: it changes them again after the restart.
    const r = await nsupdate(serve.dnsPort, DYN, ['update delete a.dyn.example.com. A 192.0.2.11']);
    assert.equal(rcodeOf(r), 'NOERROR', r.out);
    assert.deepEqual(await answer(serve.dnsPort, 'a.dyn.example.com.', 'A'), ['192.0.2.10']);
  });
});

describe('RFC 2136 UPDATE through serve --workers', () => {
  test('updates reaching any DNS process are applied by the primary', async () => {
    const dir = await tempDir('rfc2136-workers');
    const stateDir = await tempDir('rfc2136-workers-state');
    for (const k of KEYS) await writeFile(path.join(dir, `${k.name}.key`), k.secret);
    const manifestDir = path.join(dir, 'manifests');
    await run('mkdir', ['-p', manifestDir]);
    const [unused] = await freePorts(1);
    await writeFile(path.join(manifestDir, 'zones.yaml'), manifests(dir, unused!));
    const serve = await startServe(manifestDir, stateDir, ['--workers', '3']);
    try {
      // Each nsupdate uses a new source port: the kernel spreads them over the processes.
      for (let i = 0; i < 8; i++) {
        const r = await nsupdate(
          serve.dnsPort,
          DYN,
          [`update add w${i}.dyn.example.com. 60 A 192.0.2.${i + 1}`],
          {
            tcp: i % 2 === 1,
          },
        );
        assert.equal(rcodeOf(r), 'NOERROR', r.out);
      }
      for (let i = 0; i < 8; i++) {
        const { value } = await waitFor(async () => {
          const a = await answer(serve.dnsPort, `w${i}.dyn.example.com.`, 'A');
          return a.length > 0 ? a : undefined;
        });
        assert.deepEqual(value, [`192.0.2.${i + 1}`]);
      }
    } finally {
      await serve.stop();
      await removeAll(dir, stateDir);
    }
  });
});
