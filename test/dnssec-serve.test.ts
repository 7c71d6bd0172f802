/**
 * Signed zones served by `zonekeeper serve` (the built-in server), checked by real validators:
 *
 * - BIND's `delv`, with each zone's key as its only trust anchor: positive answers, NXDOMAIN, NODATA,
 *   an empty non-terminal, wildcard expansion and wildcard NODATA, CNAME, the DS of a secure
 *   delegation and the proof that an insecure one has none — for ECDSAP256SHA256 with NSEC and with
 *   NSEC3 (RFC 9276 parameters) and for ED25519 with split keys (KSK + ZSK); ALIAS answers signed where
 *   they are synthesized, and a NODATA for an address type the target lacks proven by a denial record
 *   signed there (alias.test with NSEC, alias3.test with NSEC3); a signed child zone from its parent's
 *   key alone;
 * - Unbound: the same ALIAS answers and NODATA validated (AD);
 * - Unbound, a validating resolver on loopback (trust anchor = the zone's key, a stub zone to the
 *   server): the AD bit on validated answers, SERVFAIL for an answer tampered with on the way;
 * - the AXFR, checked by `kzonecheck --dnssec on` and `dnssec-verify`; the same signed content after a
 *   restart (same keys, same serial, same bytes);
 * - a Knot secondary serving the signed zone it transferred, validated by `delv`;
 * - `--workers 2`: every DNS process answers signed.
 *
 * Everything runs on 127.0.0.1; Unbound's root is a closed loopback port, so nothing leaves the host.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { delv, trustAnchorFile } from './support/delv.ts';
import { dig, rdataOf } from './support/dig.ts';
import { freePort } from './support/ports.ts';
import { type Secondary, startSecondary, type TsigKeyConfig } from './support/secondaries.ts';
import { builtinClass, dnsZone, recordSet } from './support/zone-manifests.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);

const KEY: TsigKeyConfig = {
  name: 'transfer-key',
  algorithm: 'hmac-sha256',
  secret: randomBytes(32).toString('base64'),
};

/** The zones served: one per algorithm and denial. */
const ZONES = [
  { name: 'nsec.test', algorithm: 'ECDSAP256SHA256', denial: 'NSEC', keys: 'CSK' },
  { name: 'nsec3.test', algorithm: 'ECDSAP256SHA256', denial: 'NSEC3', keys: 'CSK' },
  { name: 'ed.test', algorithm: 'ED25519', denial: 'NSEC3', keys: 'Split' },
] as const;

function manifests(keyFile: string, notifyPort: number): string {
  const docs = [
    builtinClass({
      nameServers: 'ns1.nsec.test.',
      ttl: 300,
      rname: 'hostmaster@nsec.test',
      extra: `
  transfers:
    allowFrom: [127.0.0.1/32]
    tsigKeys:
      - { name: ${KEY.name}, algorithm: ${KEY.algorithm}, secretRef: { file: ${JSON.stringify(keyFile)} } }
    notify:
      - { address: "127.0.0.1:${notifyPort}", tsigKey: ${KEY.name} }`,
    }),
  ];
  for (const z of ZONES) {
    const id = z.name.replace('.', '-');
    docs.push(
      dnsZone({
        name: id,
        domainName: z.name,
        spec: [`dnssec: { enabled: true, algorithm: ${z.algorithm}, denial: ${z.denial}, keys: ${z.keys} }`],
      }),
    );
    const record = (name: string, owner: string, type: string, records: string[]) =>
      docs.push(recordSet({ zone: id, name, owner: `"${owner}"`, type, records }));
    record('ns1', 'ns1', 'A', ['192.0.2.53']);
    record('mx', '@', 'MX', [`10 mail.${z.name}.`]);
    record('mail', 'mail', 'A', ['192.0.2.25']);
    record('www', 'www', 'A', ['192.0.2.1', '192.0.2.2']);
    record('v6', 'www', 'AAAA', ['2001:db8::1']);
    record('alias', 'alias', 'CNAME', [`www.${z.name}.`]);
    record('wild', '*.wild', 'TXT', ['"wildcard"']);
    record('deep', 'deep.ent.sub', 'A', ['192.0.2.7']);
    record('secure-ns', 'secure', 'NS', [`ns.secure.${z.name}.`]);
    record('secure-ds', 'secure', 'DS', [
      '12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    ]);
    record('secure-glue', 'ns.secure', 'A', ['192.0.2.99']);
    record('insecure', 'insecure', 'NS', ['ns.elsewhere.example.']);
  }
  // ALIAS in signed zones of their own (NSEC and NSEC3): secondaries cannot answer ALIAS, so the zones
  // transferred above hold none (docs/dnssec.md). `web4`'s target has an address but no AAAA.
  for (const [zone, denial] of ALIAS_ZONES) {
    const id = zone.replace('.', '-');
    docs.push(
      dnsZone({ name: id, domainName: zone, spec: [`dnssec: { enabled: true, denial: ${denial} }`] }),
    );
    for (const [name, owner, type, records] of [
      ['www', 'www', 'A', ['192.0.2.1']],
      ['www6', 'www', 'AAAA', ['2001:db8::1']],
      ['web', 'web', 'ALIAS', [`www.${zone}.`]],
      ['v4only', 'v4only', 'A', ['192.0.2.4']],
      ['web4', 'web4', 'ALIAS', [`v4only.${zone}.`]],
    ] as const)
      docs.push(recordSet({ zone: id, name, owner, type, records }));
  }
  // A signed child of nsec.test: its DS goes into the parent by itself (RFC 4035 §2.4).
  docs.push(dnsZone({ name: 'child', domainName: 'child.nsec.test', spec: ['dnssec: { enabled: true }'] }));
  docs.push(recordSet({ zone: 'child', name: 'www', owner: 'www', type: 'A', records: ['192.0.2.77'] }));
  return `${docs.join('\n---\n')}\n`;
}

/** The record set the Knot test changes, in a file of its own. */
function changedRecord(address: string): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: nsec3-changed, namespace: dns }
spec:
  zoneRef: { name: nsec3-test }
  name: changed
  type: A
  records: ["${address}"]
`;
}

/** The delv verdicts every signed zone must give (name relative to the zone, type, verdict). */
const CASES: [string, string, string, RegExp][] = [
  ['positive', 'www', 'A', /^fully validated/],
  ['apex DNSKEY', '@', 'DNSKEY', /^fully validated/],
  ['NXDOMAIN', 'nothere', 'A', /^negative response, fully validated/],
  ['NXDOMAIN, deeper', 'a.b.nothere', 'A', /^negative response, fully validated/],
  ['NODATA', 'www', 'TXT', /^negative response, fully validated/],
  ['NODATA at an empty non-terminal', 'ent.sub', 'A', /^negative response, fully validated/],
  ['wildcard expansion', 'x.wild', 'TXT', /^fully validated/],
  ['wildcard expansion, two labels deep', 'a.b.wild', 'TXT', /^fully validated/],
  ['wildcard NODATA', 'x.wild', 'A', /^negative response, fully validated/],
  ['CNAME', 'alias', 'A', /^fully validated/],
  ['secure delegation: DS', 'secure', 'DS', /^fully validated/],
  ['insecure delegation: no DS', 'insecure', 'DS', /^negative response, fully validated/],
];

/** Zones with ALIAS records, signed with NSEC and with NSEC3. */
const ALIAS_ZONES = [
  ['alias.test', 'NSEC'],
  ['alias3.test', 'NSEC3'],
] as const;

/**
 * ALIAS answers: synthesized where they are answered, and signed there (ADR 0021); a NODATA for an
 * address type the target lacks proven by the owner's denial record without the type (ADR 0028).
 */
const ALIAS_CASES: [string, string, string, RegExp][] = [
  ['ALIAS, A synthesized and signed where it is answered', 'web', 'A', /^fully validated/],
  ['ALIAS, AAAA synthesized and signed where it is answered', 'web', 'AAAA', /^fully validated/],
  [
    'NODATA at an ALIAS owner (a type never synthesized)',
    'web',
    'TXT',
    /^negative response, fully validated/,
  ],
  ['ALIAS, A of a target without AAAA', 'web4', 'A', /^fully validated/],
  ['NODATA AAAA at an ALIAS whose target has none', 'web4', 'AAAA', /^negative response, fully validated/],
];

const fqdn = (rel: string, zone: string) => (rel === '@' ? `${zone}.` : `${rel}.${zone}.`);

async function validateAll(port: number, dir: string, zone: string, cases = CASES): Promise<void> {
  const anchors = await trustAnchorFile(dir, port, zone);
  for (const [label, rel, type, expected] of cases) {
    const r = await delv(port, anchors, zone, fqdn(rel, zone), type);
    assert.match(r.verdict, expected, `${zone} ${label} (${rel} ${type}):\n${r.raw}`);
  }
}

/** AXFR with TSIG through `dig`, as a zone file. */
async function axfr(port: number, zone: string): Promise<string> {
  const { stdout } = await run(
    'dig',
    [
      '@127.0.0.1',
      '-p',
      String(port),
      '-y',
      `${KEY.algorithm}:${KEY.name}:${KEY.secret}`,
      `${zone}.`,
      'AXFR',
      '+nocmd',
      '+nostats',
      '+nocomments',
    ],
    { timeout: 20_000, maxBuffer: 16 << 20 },
  );
  // The TSIG records are the transfer's, not the zone's.
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith(';') && !/\sTSIG\s/.test(l))
    .join('\n')
    .concat('\n');
}

describe('zonekeeper serve: signed zones validated by delv, Unbound, kzonecheck, dnssec-verify, Knot', () => {
  let manifestDir: string;
  let stateDir: string;
  let work: string;
  let serve: ServeProcess | undefined;
  let knot: Secondary | undefined;
  let knotPort: number;

  before(async () => {
    manifestDir = await tempDir('dnssec-serve-manifests');
    stateDir = await tempDir('dnssec-serve-state');
    work = await tempDir('dnssec-serve-work');
    const keyFile = path.join(work, 'tsig.key');
    await writeFile(keyFile, `${KEY.secret}\n`);
    knotPort = await freePort();
    await writeFile(path.join(manifestDir, 'zones.yaml'), manifests(keyFile, knotPort));
    serve = await startServe(manifestDir, stateDir);
  });
  after(async () => {
    await knot?.close();
    await serve?.stop();
    await removeAll(manifestDir, stateDir, work);
  });

  for (const z of ZONES) {
    test(`delv validates every kind of answer: ${z.algorithm}, ${z.denial}, ${z.keys} (${z.name})`, async () => {
      await validateAll(serve!.dnsPort, work, z.name);
    });
  }

  for (const [zone, denial] of ALIAS_ZONES)
    test(`delv validates ALIAS answers and NODATA signed where they are synthesized (${zone}, ${denial})`, async () => {
      await validateAll(serve!.dnsPort, work, zone, ALIAS_CASES);
    });

  for (const [zone, denial] of ALIAS_ZONES)
    test(`Unbound validates (AD) ALIAS answers and their NODATA (${zone}, ${denial})`, async () => {
      const unbound = await startUnbound(work, serve!.dnsPort, serve!.dnsPort, zone);
      try {
        for (const [name, type, answers] of [
          ['web', 'A', 2],
          ['web4', 'A', 2],
          ['web', 'TXT', 0],
          ['web4', 'AAAA', 0],
        ] as const) {
          const r = await dig(unbound.port, `${name}.${zone}`, type, {
            args: ['+rec', '+dnssec', '+time=5'],
          });
          assert.equal(r.status, 'NOERROR', `${name} ${type}:\n${r.raw}`);
          assert.ok(r.flags.includes('ad'), `${name} ${type} validated (AD):\n${r.raw}`);
          // The address and its RRSIG, or no answer at all (NODATA).
          assert.equal(r.answer.length, answers, r.raw);
        }
      } finally {
        await unbound.stop();
      }
    });

  test('DO clear: the same answers without RRSIGs or denial records', async () => {
    const port = serve!.dnsPort;
    const plain = await dig(port, 'www.nsec.test', 'A');
    assert.deepEqual(
      plain.answer.map((l) => l.split(' ')[3]),
      ['A', 'A'],
    );
    const nx = await dig(port, 'nothere.nsec3.test', 'A');
    assert.equal(nx.status, 'NXDOMAIN');
    assert.deepEqual(
      nx.authority.map((l) => l.split(' ')[3]),
      ['SOA'],
    );
    const signed = await dig(port, 'nothere.nsec3.test', 'A', { args: ['+dnssec'] });
    assert.ok(signed.authority.some((l) => l.split(' ')[3] === 'NSEC3'));
    assert.ok(signed.authority.some((l) => l.split(' ')[3] === 'RRSIG'));
  });

  test('referrals with DO: DS and its RRSIG for a secure delegation, the signed NSEC/NSEC3 for an insecure one', async () => {
    const port = serve!.dnsPort;
    const types = (r: Awaited<ReturnType<typeof dig>>) => r.authority.map((l) => l.split(' ')[3]);
    const secure = await dig(port, 'host.secure.nsec.test', 'A', { args: ['+dnssec'] });
    assert.deepEqual(types(secure), ['NS', 'DS', 'RRSIG']);
    assert.ok(!secure.flags.includes('aa'));
    // Glue is never signed (RFC 4035 §2.2).
    assert.deepEqual(
      secure.additional.map((l) => l.split(' ')[3]),
      ['A'],
    );
    assert.deepEqual(types(await dig(port, 'host.insecure.nsec.test', 'A', { args: ['+dnssec'] })), [
      'NS',
      'NSEC',
      'RRSIG',
    ]);
    assert.deepEqual(types(await dig(port, 'host.insecure.nsec3.test', 'A', { args: ['+dnssec'] })), [
      'NS',
      'NSEC3',
      'RRSIG',
    ]);
  });

  test('the keys are stored in the state directory, mode 0600', async () => {
    for (const z of ZONES) {
      const file = path.join(stateDir, 'dnssec', `${z.name}.json`);
      const s = await stat(file);
      assert.equal(s.mode & 0o777, 0o600, `${file} mode ${(s.mode & 0o777).toString(8)}`);
      const dnskeys = rdataOf(await dig(serve!.dnsPort, `${z.name}.`, 'DNSKEY'), 'DNSKEY');
      const stored = JSON.parse(await readFile(file, 'utf8')) as { keys: { publicKey: string }[] };
      assert.equal(
        dnskeys.map((k) => k.split(' ').slice(3).join('')).join(),
        stored.keys.map((k) => k.publicKey).join(),
      );
    }
    assert.equal((await stat(path.join(stateDir, 'dnssec'))).mode & 0o777, 0o700);
  });

  test('the earliest signature expiration of each signed zone is a metric, a refresh period ahead after a signing', async () => {
    const text = await (await fetch(`${serve!.httpUrl}/metrics`)).text();
    const now = Date.now() / 1000;
    for (const z of ZONES) {
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`zonekeeper_dnssec_signatures_expire_seconds{zone="${z.name}."}`));
      assert.ok(line, `${z.name} in /metrics`);
      const at = Number(line.split(' ').at(-1));
      assert.ok(at > now + 7 * 86400 && at < now + 15 * 86400, `${z.name} expires at ${at}`);
    }
  });

  for (const z of ZONES) {
    test(`AXFR of ${z.name} verified by kzonecheck --dnssec on and dnssec-verify`, async () => {
      const text = await axfr(serve!.dnsPort, z.name);
      const file = path.join(work, `${z.name}.axfr`);
      await writeFile(file, text);
      await run('kzonecheck', ['--dnssec', 'on', '-o', `${z.name}.`, file]);
      // -z for a combined signing key (SEP flag) that signs every RRset; split keys are checked as such.
      await run('dnssec-verify', [...(z.keys === 'CSK' ? ['-z'] : []), '-o', `${z.name}.`, file]);
      // The verifiers are real: a changed address fails them.
      const bad = path.join(work, `${z.name}.tampered`);
      assert.ok(text.includes('\t192.0.2.1\n'));
      await writeFile(bad, text.replace('\t192.0.2.1\n', '\t192.0.2.111\n'));
      await assert.rejects(run('kzonecheck', ['--dnssec', 'on', '-o', `${z.name}.`, bad]));
    });
  }

  test('a signed child zone validates from the parent’s key alone: its DS is in the parent', async () => {
    const anchors = await trustAnchorFile(work, serve!.dnsPort, 'nsec.test');
    const r = await waitFor(async () => {
      const v = await delv(serve!.dnsPort, anchors, 'nsec.test', 'www.child.nsec.test.', 'A');
      return /^fully validated/.test(v.verdict) ? v : undefined;
    }, 20_000);
    assert.deepEqual(
      r.value.answer.filter((l) => l.split(/\s+/)[3] === 'A').map((l) => l.split(/\s+/).at(-1)),
      ['192.0.2.77'],
    );
    const nx = await delv(serve!.dnsPort, anchors, 'nsec.test', 'nothere.child.nsec.test.', 'A');
    assert.match(nx.verdict, /^negative response, fully validated/, nx.raw);
  });

  test('a Knot secondary serves the signed zone it transferred, and delv validates it there', async () => {
    knot = await startSecondary({
      kind: 'knot',
      zone: 'nsec3.test.',
      primaryPort: serve!.dnsPort,
      key: KEY,
      port: knotPort,
    });
    const primary = await axfr(serve!.dnsPort, 'nsec3.test');
    const soa = /\sSOA\s.*\s(\d+) \d+ \d+ \d+ \d+$/m.exec(primary)![1];
    await waitFor(async () => ((await knot!.soaSerial()) === Number(soa) ? true : undefined), 20_000);
    await validateAll(knot.port, work, 'nsec3.test');
    // A change: a new serial signed again, sent by NOTIFY; the secondary asks IXFR and gets the whole
    // signed zone, and still validates (the new name included).
    await writeFile(path.join(manifestDir, 'changed.yaml'), changedRecord('192.0.2.200'));
    await waitFor(async () => {
      const serial = await knot!.soaSerial();
      return serial !== undefined && serial > Number(soa) ? true : undefined;
    }, 30_000);
    const anchors = await trustAnchorFile(work, knot.port, 'nsec3.test');
    const v = await delv(knot.port, anchors, 'nsec3.test', 'changed.nsec3.test.', 'A');
    assert.match(v.verdict, /^fully validated/, v.raw);
    await validateAll(knot.port, work, 'nsec3.test');
  });

  test('Unbound validates (AD) through a stub zone, and returns SERVFAIL for a tampered answer', async () => {
    const proxyPort = await freePort();
    const proxy = await tamperingProxy(proxyPort, serve!.dnsPort);
    const unbound = await startUnbound(work, proxyPort, serve!.dnsPort, 'nsec.test');
    try {
      const ask = (name: string, type: string) =>
        dig(unbound.port, name, type, { args: ['+rec', '+dnssec', '+time=5'] });
      for (const [name, type, status] of [
        ['deep.ent.sub.nsec.test', 'A', 'NOERROR'],
        ['alias.nsec.test', 'AAAA', 'NOERROR'],
        ['x.wild.nsec.test', 'TXT', 'NOERROR'],
        ['nothere.nsec.test', 'A', 'NXDOMAIN'],
        ['mail.nsec.test', 'TXT', 'NOERROR'],
        ['secure.nsec.test', 'DS', 'NOERROR'],
        ['insecure.nsec.test', 'DS', 'NOERROR'],
      ] as const) {
        const r = await ask(name, type);
        assert.equal(r.status, status, `${name} ${type}:\n${r.raw}`);
        assert.ok(r.flags.includes('ad'), `${name} ${type} validated (AD):\n${r.raw}`);
      }
      // The proxy changes 192.0.2.1 into 192.0.2.111 on the way: the signature no longer matches.
      const tampered = await ask('www.nsec.test', 'A');
      assert.equal(tampered.status, 'SERVFAIL', tampered.raw);
      // With checking disabled (CD), Unbound hands out what it got: the tampering was real.
      const unchecked = await dig(unbound.port, 'www.nsec.test', 'A', { args: ['+rec', '+cd'] });
      assert.ok(
        unchecked.answer.some((l) => l.endsWith('192.0.2.111')),
        unchecked.raw,
      );
    } finally {
      await unbound.stop();
      proxy.close();
    }
  });

  test('a restart signs the same serial to the same bytes (same keys, signing time kept with the serial)', async () => {
    const before = await axfr(serve!.dnsPort, 'nsec3.test');
    await serve!.stop();
    serve = await startServe(manifestDir, stateDir);
    const again = await axfr(serve.dnsPort, 'nsec3.test');
    assert.equal(again, before);
  });

  test('--workers 2: every DNS process answers signed', async () => {
    await serve!.stop();
    serve = await startServe(manifestDir, stateDir, ['--workers', '2']);
    // SO_REUSEPORT spreads queries over the processes by source port: many queries reach both.
    for (let i = 0; i < 4; i++) {
      await validateAll(serve.dnsPort, work, 'nsec.test');
      for (const [zone] of ALIAS_ZONES) await validateAll(serve.dnsPort, work, zone, ALIAS_CASES);
    }
    for (let i = 0; i < 20; i++) {
      const r = await dig(serve.dnsPort, 'nothere.ed.test', 'A', { args: ['+dnssec'] });
      assert.ok(
        r.authority.some((l) => l.split(' ')[3] === 'NSEC3'),
        r.raw,
      );
    }
  });
});

/** A UDP relay to the server that turns the address 192.0.2.1 into 192.0.2.111 in every response. */
async function tamperingProxy(port: number, serverPort: number): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (query, client) => {
    const upstream = dgram.createSocket('udp4');
    upstream.on('message', (response) => {
      const bytes = Buffer.from(response);
      const from = Buffer.from([0, 4, 192, 0, 2, 1]); // RDLENGTH 4, then the address
      for (let at = bytes.indexOf(from); at >= 0; at = bytes.indexOf(from, at + 1)) bytes[at + 5] = 111;
      socket.send(bytes, client.port, client.address);
      upstream.close();
    });
    upstream.send(query, serverPort, '127.0.0.1');
  });
  await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve));
  return socket;
}

/**
 * Unbound in the foreground with a temporary configuration: validator on, the zone's KSK/CSK as trust
 * anchor, a stub zone to `stubPort`; the root is a stub to a closed loopback port (nothing leaves the
 * host). The answers here are small: Unbound never falls back to TCP, which the proxy does not relay.
 */
async function startUnbound(
  dir: string,
  stubPort: number,
  serverPort: number,
  zone: string,
): Promise<{ port: number; stop: () => Promise<void> }> {
  const keys = rdataOf(await dig(serverPort, `${zone}.`, 'DNSKEY'), 'DNSKEY').filter((k) =>
    k.startsWith('257 '),
  );
  const port = await freePort();
  const closed = await freePort();
  const conf = path.join(dir, `unbound-${zone}.conf`);
  await writeFile(
    conf,
    [
      'server:',
      '  interface: 127.0.0.1',
      `  port: ${port}`,
      '  do-daemonize: no',
      '  use-syslog: no',
      '  logfile: ""',
      '  username: ""',
      '  chroot: ""',
      `  directory: "${dir}"`,
      `  pidfile: "${path.join(dir, 'unbound.pid')}"`,
      '  do-ip6: no',
      '  do-not-query-localhost: no',
      '  access-control: 127.0.0.0/8 allow',
      '  module-config: "validator iterator"',
      '  aggressive-nsec: no',
      '  qname-minimisation: no',
      '  val-log-level: 2',
      '  verbosity: 1',
      // RFC 6761 names (test.) are answered locally by default: these zones are served by the stub.
      '  local-zone: "test." nodefault',
      ...keys.map((k) => `  trust-anchor: "${zone}. DNSKEY ${k}"`),
      'remote-control:',
      '  control-enable: no',
      'stub-zone:',
      `  name: "${zone}."`,
      `  stub-addr: 127.0.0.1@${stubPort}`,
      'stub-zone:',
      '  name: "."',
      `  stub-addr: 127.0.0.1@${closed}`,
      '',
    ].join('\n'),
  );
  await run('unbound-checkconf', [conf]);
  const child: ChildProcess = spawn('unbound', ['-d', '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 5000).unref();
    });
  try {
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`unbound exited:\n${output}`);
      const r = await dig(port, `${zone}.`, 'SOA', { args: ['+rec'] }).catch(() => undefined);
      return r && r.status !== 'NONE' ? true : undefined;
    }, 20_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { port, stop };
}
