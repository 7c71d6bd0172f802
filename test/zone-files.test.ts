import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseZoneFile } from '../src/dns/zone-file-parser.ts';
import { dateSerial } from '../src/zones/serial.ts';
import { type DigResult, dig } from './support/dig.ts';
import {
  CLI,
  copyExamples,
  ROOT,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function zonekeeper(args: string[], cwd = ROOT): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { cwd, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

async function tool(command: string, args: string[], cwd?: string): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(command, args, { timeout: 30_000, ...(cwd ? { cwd } : {}) });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/**
 * Knot DNS before 3.3 does not know the `dohpath` SvcParam mnemonic (RFC 9461, key 7); its generic
 * `key7=` form is the same parameter (RFC 9460 §2.1). Only the copy given to an old kzonecheck is
 * rewritten; named-checkzone reads the exported file as it is.
 */
async function forKzonecheck(text: string): Promise<string> {
  const version = (await tool('kzonecheck', ['-V'])).stdout;
  const m = /(\d+)\.(\d+)/.exec(version);
  const old = m !== null && (Number(m[1]) < 3 || (Number(m[1]) === 3 && Number(m[2]) < 3));
  return old ? text.replaceAll(' dohpath=', ' key7=') : text;
}

const ZONES = ['example.com.', 'sub.example.com.', '2.0.192.in-addr.arpa.'];
/** Import order: child zones first, so that the parent's import sees them in --manifests and leaves their NS out. */
const IMPORT_ORDER = ['sub.example.com.', '2.0.192.in-addr.arpa.', 'example.com.'];

/** A dig result with the SOA serial masked (each server picks its own serial). */
function normalised(r: DigResult): string[] {
  const mask = (line: string) => {
    const f = line.split(' ');
    if (f[3] === 'SOA') f[6] = 'SERIAL';
    return f.join(' ');
  };
  return [
    `status ${r.status}`,
    `flags ${[...r.flags].sort().join(' ')}`,
    ...r.answer.map((l) => `answer ${mask(l)}`),
    ...r.authority.map((l) => `authority ${mask(l)}`),
    ...r.additional.map((l) => `additional ${mask(l)}`),
  ];
}

describe('zone export / zone import round trip on the examples', () => {
  let examples: string;
  let state: string;
  let work: string;
  let imported: string;
  let original: ServeProcess;
  let copy: ServeProcess | undefined;
  const exported = new Map<string, string>();

  before(async () => {
    examples = await copyExamples();
    state = await tempDir('state');
    work = await tempDir('zone-files');
    imported = path.join(work, 'imported');
    await mkdir(imported);
    original = await startServe(examples, state);
  });
  after(async () => {
    await original?.stop();
    await copy?.stop();
    await removeAll(examples, state, work);
  });

  test('export prints each zone at the serial serve publishes', async () => {
    for (const zone of ZONES) {
      const exportNow = () =>
        zonekeeper(['zone', 'export', '--manifests', examples, '--zone', zone, '--state-dir', state]);
      const served = await dig(original.dnsPort, zone, 'SOA');
      const soa = served.answer.find((l) => l.split(' ')[3] === 'SOA')!;
      const serial = soa.split(' ')[6];
      const atServed = new RegExp(`^\\S+\\t\\d+\\tIN\\tSOA\\t\\S+ \\S+ ${serial} `, 'm');
      // Until `serve` has saved the content hash of a zone's first serial (a second after its first
      // answer), the export shows the next serial: it cannot tell which content that serial has.
      let r = await exportNow();
      // Polled for up to 10 s; the last export is what the assertions below read (a timeout included).
      await waitFor(
        async () => {
          if (r.code !== 0 || atServed.test(r.stdout)) return r;
          r = await exportNow();
          return undefined;
        },
        10_000,
        250,
      ).catch(() => undefined);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '');
      assert.match(r.stdout, atServed, `${zone}: ${r.stdout}`);
      exported.set(zone, r.stdout);
      await writeFile(path.join(work, `${zone}zone`), r.stdout);
    }
    // Without --state-dir: the date serial of a first start.
    const fresh = await zonekeeper(['zone', 'export', '--manifests', examples, '--zone', 'example.com']);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.match(fresh.stdout, new RegExp(`\\tSOA\\t\\S+ \\S+ ${dateSerial(new Date())} `));
  });

  test('kzonecheck and named-checkzone accept every exported zone', async () => {
    assert.equal(exported.size, ZONES.length, 'the export test runs first');
    for (const [zone, text] of exported) {
      const knotFile = path.join(work, `${zone}knot.zone`);
      await writeFile(knotFile, await forKzonecheck(text));
      const knot = await tool('kzonecheck', ['-o', zone, knotFile]);
      assert.equal(knot.code, 0, `kzonecheck ${zone}:\n${knot.stdout}${knot.stderr}`);
      const bind = await tool('named-checkzone', [zone.slice(0, -1), path.join(work, `${zone}zone`)]);
      assert.equal(bind.code, 0, `named-checkzone ${zone}:\n${bind.stdout}${bind.stderr}`);
      assert.match(bind.stdout, /OK/);
    }
  });

  test('import gives back manifests that validate', async () => {
    await copyFile(
      path.join(ROOT, 'examples/00-builtin-class.yaml'),
      path.join(imported, '00-builtin-class.yaml'),
    );
    for (const zone of IMPORT_ORDER) {
      const args = [
        'zone',
        'import',
        path.join(work, `${zone}zone`),
        '--zone',
        zone,
        '--namespace',
        'imported',
      ];
      const r = await zonekeeper([...args, '--manifests', imported, '--strict']);
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /: (error|warning): /, r.stderr);
      assert.match(r.stdout, /^# /);
      await writeFile(path.join(imported, `${zone}yaml`), r.stdout);
    }
    const validate = await zonekeeper(['validate', imported]);
    assert.equal(validate.code, 0, validate.stdout + validate.stderr);
    assert.match(validate.stdout, /0 error\(s\), 0 warning\(s\)/);
  });

  test('serve on the imported manifests gives the same answer for every RRset of every zone', async () => {
    const server: ServeProcess = await startServe(imported, path.join(work, 'state-imported'));
    copy = server;
    const queries: [string, string][] = [];
    for (const [zone, text] of exported) {
      const parsed = parseZoneFile(text, { origin: zone });
      assert.deepEqual(parsed.problems, []);
      const seen = new Set<string>();
      for (const r of parsed.records) {
        const type = r.type === 'ALIAS' ? 'TYPE65401' : r.type;
        const key = `${r.owner} ${type}`;
        if (seen.has(key)) continue;
        seen.add(key);
        queries.push([r.owner, type]);
        // ALIAS answers address queries.
        if (r.type === 'ALIAS') queries.push([r.owner, 'A'], [r.owner, 'AAAA']);
      }
      queries.push([`nothing-here.${zone}`, 'A'], [zone, 'TXT'], [`x.${zone}`, 'ANY']);
    }
    assert.ok(queries.length > 30, `${queries.length} queries`);
    for (const [name, type] of queries) {
      const [a, b] = await Promise.all([dig(original.dnsPort, name, type), dig(server.dnsPort, name, type)]);
      assert.deepEqual(normalised(b), normalised(a), `${name} ${type}`);
    }
    const www = await dig(server.dnsPort, 'www.example.com', 'A');
    assert.equal(www.answer.length, 2);
  });
});

describe('zone import of a hand-written BIND zone file', () => {
  let dir: string;

  before(async () => {
    dir = await tempDir('bind-zone');
    await writeFile(
      path.join(dir, 'db.example.org'),
      [
        '; example.org, the way BIND users write it',
        '$TTL 1h',
        '$ORIGIN example.org.',
        '@   IN  SOA ns1.example.org. hostmaster.example.org. (',
        '            2024031501 ; serial',
        '            2h         ; refresh',
        '            15m        ; retry',
        '            2w         ; expire',
        '            5m )       ; negative caching TTL',
        '        IN  NS  ns1',
        '        IN  NS  ns2.example.net.',
        '        IN  MX  10 mail',
        '        IN  TXT "v=spf1 mx -all" ; SPF',
        'ns1     IN  A   192.0.2.53',
        'mail    IN  A   192.0.2.25',
        'www 300 IN  A   192.0.2.80',
        '        IN  AAAA 2001:db8::80',
        'ftp     IN  CNAME www',
        'host    IN  HINFO "PC" "Linux" ; not supported: skipped',
        '$INCLUDE services.inc _tcp',
        'legacy  IN  NS  ns.legacy',
        'ns.legacy IN A  192.0.2.99  ; glue',
        '',
      ].join('\n'),
    );
    await writeFile(
      path.join(dir, 'services.inc'),
      [
        '; SRV records, relative to _tcp.example.org.',
        '_sip    IN  SRV ( 10 60 5060',
        '                  sip.example.org. )',
        '_xmpp-server 600 IN SRV 5 0 5269 mail.example.org.',
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    await removeAll(dir);
  });

  test('named-checkzone accepts the file itself', async () => {
    const r = await tool('named-checkzone', ['example.org', 'db.example.org'], dir);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  test('imports, reports what is skipped with file and line, and the YAML validates and serves', async () => {
    const r = await zonekeeper([
      'zone',
      'import',
      path.join(dir, 'db.example.org'),
      '--zone',
      'example.org',
      '--namespace',
      'web',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /db\.example\.org:19:\d+: warning: type HINFO is not supported by Zonekeeper; the record is skipped \[UNSUPPORTED_TYPE\]/,
    );
    assert.match(r.stderr, /note: the apex NS records \(ns1\.example\.org\., ns2\.example\.net\.\)/);
    assert.match(r.stdout, /name: _sip\._tcp\n {2}type: SRV/);
    assert.match(r.stdout, /name: _xmpp-server\._tcp\n {2}type: SRV\n {2}ttl: 600/);
    assert.match(r.stdout, /name: ns\.legacy\n {2}type: A/);

    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests, { recursive: true });
    await writeFile(path.join(manifests, 'example-org.yaml'), r.stdout);
    await writeFile(
      path.join(manifests, 'class.yaml'),
      [
        'apiVersion: dns.zonekeeper.dev/v1alpha1',
        'kind: DNSZoneClass',
        'metadata: { name: builtin }',
        'spec:',
        '  backend: { builtin: {} }',
        '  nameServers: [ns1.example.org., ns2.example.net.]',
        '',
      ].join('\n'),
    );
    const validate = await zonekeeper(['validate', manifests]);
    assert.equal(validate.code, 0, validate.stdout);
    assert.match(validate.stdout, /0 error\(s\), 0 warning\(s\)/);

    const serve = await startServe(manifests, path.join(dir, 'state'));
    try {
      const soa = await dig(serve.dnsPort, 'example.org', 'SOA');
      assert.match(
        soa.answer[0] ?? '',
        /^example\.org\. 3600 IN SOA ns1\.example\.org\. hostmaster\.example\.org\. \d+ 7200 900 1209600 300$/,
      );
      const srv = await dig(serve.dnsPort, '_sip._tcp.example.org', 'SRV');
      assert.deepEqual(srv.answer, ['_sip._tcp.example.org. 3600 IN SRV 10 60 5060 sip.example.org.']);
      const www = await dig(serve.dnsPort, 'www.example.org', 'A');
      assert.deepEqual(www.answer, ['www.example.org. 300 IN A 192.0.2.80']);
      const ftp = await dig(serve.dnsPort, 'ftp.example.org', 'AAAA');
      assert.deepEqual(ftp.answer, [
        'ftp.example.org. 3600 IN CNAME www.example.org.',
        // A blank owner repeats the owner, not the TTL: $TTL applies (RFC 2308 §4).
        'www.example.org. 3600 IN AAAA 2001:db8::80',
      ]);
      const referral = await dig(serve.dnsPort, 'x.legacy.example.org', 'A');
      assert.deepEqual(referral.authority, ['legacy.example.org. 3600 IN NS ns.legacy.example.org.']);
      assert.deepEqual(referral.additional, ['ns.legacy.example.org. 3600 IN A 192.0.2.99']);
    } finally {
      await serve.stop();
    }
  });

  test('--strict turns skipped records into errors: exit 1, no YAML', async () => {
    const r = await zonekeeper([
      'zone',
      'import',
      path.join(dir, 'db.example.org'),
      '--zone',
      'example.org',
      '--namespace',
      'web',
      '--strict',
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /db\.example\.org:19:\d+: error: type HINFO is not supported/);
    assert.match(r.stderr, /no YAML written/);
  });

  test('a broken file: every problem with its line, exit 1, no YAML', async () => {
    const file = path.join(dir, 'broken.zone');
    await writeFile(
      file,
      '$TTL 1h\n@ SOA ns1 h ( 1 2 3 4 5 )\nwww A 192.0.2.300\nbad "unterminated\n$INCLUDE missing.inc\nok A 192.0.2.1\n',
    );
    const r = await zonekeeper(['zone', 'import', file, '--zone', 'example.org', '--namespace', 'web']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /broken\.zone:3:7: error: .*192\.0\.2\.300.* \[BAD_RDATA\]/);
    assert.match(r.stderr, /broken\.zone:4:5: error: .* \[UNTERMINATED_QUOTE\]/);
    assert.match(
      r.stderr,
      /broken\.zone:5:10: error: \$INCLUDE missing\.inc: .*ENOENT.* \[INCLUDE_UNREADABLE\]/,
    );
  });

  test('export of a zone that is not served: exit 1 with the reason', async () => {
    const r = await zonekeeper([
      'zone',
      'export',
      '--manifests',
      path.join(ROOT, 'examples'),
      '--zone',
      'nope.test',
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /no DNSZone in .* serves nope\.test\.; the zones served are 2\.0\.192\.in-addr\.arpa\., example\.com\., sub\.example\.com\./,
    );
  });
});
