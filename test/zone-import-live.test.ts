/**
 * `zonekeeper zone import --axfr` from a real `knotd` (TSIG-signed transfer) and `--powerdns` from a
 * real PowerDNS: the YAML they print, served by `zonekeeper serve`, answers an AXFR with exactly the
 * records the source answers (the SOA aside: its serial and MNAME are Zonekeeper's). A wrong TSIG key
 * and a zone larger than --max-records are refused.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { type KnotProcess, startKnot } from './support/knot.ts';
import { type PowerDnsProcess, powerDnsAvailable, startPowerDns } from './support/powerdns.ts';
import { axfr, type ZoneVersion, zoneVersion } from './support/zone-content.ts';
import { CLI, removeAll, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);

const CLASS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: builtin
spec:
  nameServers: [ns1.import.test., ns2.import.test.]
  backend:
    builtin: {}
  transfers:
    allowFrom: [127.0.0.1/32]
    requireTsig: false
`;

/** A zone with a bit of everything Zonekeeper serves; apex NS as the class's, at the zone's TTL. */
const ZONE = `$ORIGIN import.test.
$TTL 300
@       IN SOA ns1.import.test. hostmaster.import.test. 7 3600 600 1209600 300
@       IN NS  ns1.import.test.
@       IN NS  ns2.import.test.
@       IN MX  10 mail.import.test.
@       IN TXT "v=spf1 mx -all"
@       IN CAA 0 issue "letsencrypt.org"
ns1     IN A   192.0.2.53
ns2     IN A   198.51.100.53
www     IN A   192.0.2.80
www     IN A   192.0.2.81
www     IN AAAA 2001:db8::80
mail 600 IN A  192.0.2.25
docs    IN CNAME www.import.test.
_sip._tcp IN SRV 10 60 5060 sip.import.test.
sip     IN A   192.0.2.60
sub     IN NS  ns.sub.import.test.
ns.sub  IN A   192.0.2.99
txt     IN TXT "a string with spaces" "two"
`;

const KEY = { name: 'import-key', algorithm: 'hmac-sha256', secret: Buffer.alloc(32, 7).toString('base64') };

async function zonekeeper(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/** AXFR with `dig`, signed with `key` when given. */
async function digAxfr(port: number, zone: string, key?: typeof KEY): Promise<ZoneVersion | undefined> {
  const { stdout } = await run(
    'dig',
    [
      '@127.0.0.1',
      '-p',
      String(port),
      zone,
      'AXFR',
      '+tcp',
      '+time=5',
      '+tries=1',
      '+nocmd',
      '+nostats',
      '+nocomments',
      ...(key ? ['-y', `${key.algorithm}:${key.name}:${key.secret}`] : []),
    ],
    { timeout: 20_000 },
  );
  return zoneVersion(stdout.split('\n').filter((l) => !/\sTSIG\s/.test(l)));
}

/** Serves the imported YAML and returns its AXFR. */
async function serveImported(yaml: string): Promise<ZoneVersion> {
  const manifests = await tempDir('import-manifests');
  const state = await tempDir('import-state');
  await writeFile(path.join(manifests, 'class.yaml'), CLASS);
  await writeFile(path.join(manifests, 'zone.yaml'), yaml);
  const serve = await startServe(manifests, state);
  try {
    const { value } = await waitFor(() => axfr(serve.dnsPort, 'import.test.'), 20_000, 100);
    return value;
  } finally {
    await serve.stop();
    await removeAll(manifests, state);
  }
}

describe('zone import --axfr from knotd with TSIG', () => {
  let knot: KnotProcess;
  let dir: string;
  let keyFile: string;
  before(async () => {
    knot = await startKnot({ zones: [{ origin: 'import.test.', text: ZONE }], transferKey: KEY });
    dir = await tempDir('import-keys');
    keyFile = path.join(dir, 'key');
    await writeFile(keyFile, `${KEY.secret}\n`);
  });
  after(async () => {
    await knot?.stop();
    await removeAll(dir);
  });

  test('imports the zone and serves the same records', async () => {
    const source = await digAxfr(knot.port, 'import.test.', KEY);
    assert.ok(source, 'knotd answers the signed AXFR');
    const r = await zonekeeper([
      'zone',
      'import',
      '--axfr',
      `127.0.0.1:${knot.port}`,
      '--tsig-key',
      `${KEY.name}:${KEY.algorithm}:${keyFile}`,
      '--zone',
      'import.test',
      '--namespace',
      'dns',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /record\(s\) read from AXFR from 127\.0\.0\.1:\d+ \(TSIG import-key\.\)/);
    assert.match(r.stdout, /kind: DNSZone\b/);
    const served = await serveImported(r.stdout);
    assert.equal(served.content, source.content);
  });

  test('a wrong TSIG key is refused and nothing is printed', async () => {
    const wrong = path.join(dir, 'wrong');
    await writeFile(wrong, Buffer.alloc(32, 9).toString('base64'));
    const r = await zonekeeper([
      'zone',
      'import',
      '--axfr',
      `127.0.0.1:${knot.port}`,
      '--tsig-key',
      `${KEY.name}:${KEY.algorithm}:${wrong}`,
      '--zone',
      'import.test',
      '--namespace',
      'dns',
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /NOTAUTH, TSIG error BADSIG/);
  });

  test('without the key the transfer is refused', async () => {
    const r = await zonekeeper([
      'zone',
      'import',
      '--axfr',
      `127.0.0.1:${knot.port}`,
      '--zone',
      'import.test',
      '--namespace',
      'dns',
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /AXFR of import\.test\. from 127\.0\.0\.1:\d+: the server answered (REFUSED|NOTAUTH)/,
    );
  });

  test('a zone larger than --max-records is refused', async () => {
    const r = await zonekeeper([
      'zone',
      'import',
      '--axfr',
      `127.0.0.1:${knot.port}`,
      '--tsig-key',
      `${KEY.name}:${KEY.algorithm}:${keyFile}`,
      '--zone',
      'import.test',
      '--namespace',
      'dns',
      '--max-records',
      '5',
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /more than 5 records; refused/);
  });
});

describe('zone import --powerdns', async () => {
  const unavailable = await powerDnsAvailable('sqlite');
  let pdns: PowerDnsProcess | undefined;
  let dir: string;
  before(async () => {
    if (unavailable) return;
    pdns = await startPowerDns({ storage: 'sqlite' });
    dir = await tempDir('import-pdns');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'api-key'), pdns.apiKey);
    const rrsets: {
      name: string;
      type: string;
      ttl: number;
      records: { content: string; disabled: boolean }[];
    }[] = [];
    const byKey = new Map<string, (typeof rrsets)[number]>();
    for (const line of ZONE.split('\n')) {
      const m = /^(\S+)\s+(?:(\d+)\s+)?IN\s+(\S+)\s+(.*)$/.exec(line);
      if (!m) continue;
      const owner = m[1] === '@' ? 'import.test.' : `${m[1]}.import.test.`;
      const type = m[3]!;
      const content = m[4]!.trim();
      if (type === 'SOA') continue; // PowerDNS makes its own from the zone creation below
      const key = `${owner} ${type}`;
      let rrset = byKey.get(key);
      if (!rrset) {
        rrset = { name: owner, type, ttl: Number(m[2] ?? 300), records: [] };
        byKey.set(key, rrset);
        if (type !== 'NS' || owner !== 'import.test.') rrsets.push(rrset);
      }
      rrset.records.push({ content, disabled: false });
    }
    // A disabled record is not served by PowerDNS, and not imported.
    rrsets.push({
      name: 'off.import.test.',
      type: 'A',
      ttl: 300,
      records: [{ content: '192.0.2.200', disabled: true }],
    });
    const created = await pdns.api('POST', '/api/v1/servers/localhost/zones', {
      name: 'import.test.',
      kind: 'Native',
      nameservers: ['ns1.import.test.', 'ns2.import.test.'],
      rrsets: rrsets.map((r) => ({ ...r, changetype: 'REPLACE' })),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    // The SOA and apex NS as in the zone file (PowerDNS creates them with its default TTL).
    const patched = await pdns.api('PATCH', '/api/v1/servers/localhost/zones/import.test.', {
      rrsets: [
        {
          name: 'import.test.',
          type: 'SOA',
          ttl: 300,
          changetype: 'REPLACE',
          records: [
            { content: 'ns1.import.test. hostmaster.import.test. 7 3600 600 1209600 300', disabled: false },
          ],
        },
        {
          name: 'import.test.',
          type: 'NS',
          ttl: 300,
          changetype: 'REPLACE',
          records: [
            { content: 'ns1.import.test.', disabled: false },
            { content: 'ns2.import.test.', disabled: false },
          ],
        },
      ],
    });
    assert.equal(patched.status, 204, JSON.stringify(patched.body));
  });
  after(async () => {
    await pdns?.stop();
    if (dir) await removeAll(dir);
  });

  test('imports the zone and serves the same records', async (t) => {
    if (unavailable || !pdns) return t.skip(unavailable);
    const source = await digAxfr(pdns.dnsPort, 'import.test.');
    assert.ok(source, 'PowerDNS answers the AXFR');
    const r = await zonekeeper([
      'zone',
      'import',
      '--powerdns',
      pdns.apiUrl,
      '--api-key-file',
      path.join(dir, 'api-key'),
      '--zone',
      'import.test',
      '--namespace',
      'dns',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /off\.import\.test\. A 192\.0\.2\.200 is disabled in PowerDNS \(not served\); skipped \[DISABLED_RECORD\]/,
    );
    const served = await serveImported(r.stdout);
    assert.equal(served.content, source.content);
  });

  test('a wrong API key is an error that says so', async (t) => {
    if (unavailable || !pdns) return t.skip(unavailable);
    await writeFile(path.join(dir, 'wrong-key'), 'not-the-key');
    const r = await zonekeeper([
      'zone',
      'import',
      '--powerdns',
      pdns.apiUrl,
      '--api-key-file',
      path.join(dir, 'wrong-key'),
      '--zone',
      'import.test',
      '--namespace',
      'dns',
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /401/);
  });
});
