import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { loadFrontDoors } from '../sources/front-door-modules.ts';
import { LocalManifestParser, type ManifestParser } from '../sources/manifests/manifest-parser.ts';
import { runValidate } from './validate.ts';

const header = [
  'apiVersion: dns.zonekeeper.dev/v1alpha1',
  'kind: DNSZoneClass',
  'metadata: {name: builtin}',
  'spec: {backend: {builtin: {}}, nameServers: [ns1.example.com.]}',
  '---',
  'apiVersion: dns.zonekeeper.dev/v1alpha1',
  'kind: DNSZone',
  'metadata: {name: z, namespace: dns}',
  'spec: {domainName: example.com, className: builtin}',
  '---',
];

/** Characters a terminal acts on (C0 but newline, DEL, C1) or that reorder or hide text (bidi and format controls). */
const UNSAFE =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/u;

async function validate(
  ...args: Parameters<typeof runValidate>[0][]
): Promise<{ code: number; out: string }> {
  const stream = new PassThrough();
  let out = '';
  stream.on('data', (d) => (out += d));
  const code = await runValidate(args[0]!, stream);
  return { code, out };
}

describe('zonekeeper validate', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-validate-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('an apex NS record set is reported at the line of its name, not at the document start', async () => {
    await writeFile(
      path.join(dir, 'z.yaml'),
      [
        ...header,
        'apiVersion: dns.zonekeeper.dev/v1alpha1', // 11
        'kind: DNSRecordSet',
        'metadata:',
        '  name: apex-ns',
        '  namespace: dns',
        'spec:',
        '  zoneRef: {name: z}',
        '  name: "@"', // 18
        '  type: NS',
        '  records: [ns9.example.net.]',
        '',
      ].join('\n'),
    );
    const { code, out } = await validate([dir]);
    assert.equal(code, 1);
    assert.match(
      out,
      /z\.yaml:18 \(document 3\): DNSRecordSet dns\/apex-ns spec\.name: apex NS records come from DNSZoneClass builtin/,
    );
  });

  test('a TXT string longer than 255 octets is valid, with a note that it is served split', async () => {
    const long = 'v=DKIM1; k=rsa; p='.padEnd(300, 'A');
    await writeFile(
      path.join(dir, 'z.yaml'),
      [
        ...header,
        'apiVersion: dns.zonekeeper.dev/v1alpha1',
        'kind: DNSRecordSet',
        'metadata: {name: dkim, namespace: dns}',
        'spec:',
        '  zoneRef: {name: z}',
        '  name: sel._domainkey',
        '  type: TXT',
        '  records:',
        '    - "short"',
        `    - ${long}`, // 20
        `    - '"${'b'.repeat(255)}" "${'c'.repeat(600)}"'`, // 21
        '',
      ].join('\n'),
    );
    const { code, out } = await validate([dir]);
    assert.equal(code, 0, out);
    const notes = out.split('\n').filter((l) => l.startsWith('note: '));
    assert.equal(notes.length, 2, out);
    assert.match(
      notes[0]!,
      /z\.yaml:20 \(document 3\): DNSRecordSet dns\/dkim spec\.records\[1\]: a TXT string of 300 octets is served as 2 strings of at most 255 octets \(RFC 1035 §3\.3\)/,
    );
    assert.match(
      notes[1]!,
      /z\.yaml:21 .* spec\.records\[2\]: a TXT string of 600 octets is served as 3 strings/,
    );
    assert.match(out, /3 valid resource\(s\), 0 error\(s\), 0 warning\(s\), 2 note\(s\)/);
  });

  test('a folder without resources says so and exits 1', async () => {
    await writeFile(path.join(dir, 'README.md'), 'not a manifest\n');
    const { code, out } = await validate([dir]);
    assert.equal(code, 1);
    assert.match(out, /^error: .*: no DNSZoneClass, DNSZone or DNSRecordSet found in 0 manifest file\(s\)/m);
  });

  test('a --state-dir that is not there is an error, not a silent validation without state', async () => {
    await writeFile(path.join(dir, 'z.yaml'), header.slice(0, -1).join('\n'));
    const stream = new PassThrough();
    let out = '';
    stream.on('data', (d) => (out += d));
    const code = await runValidate([dir], stream, { stateDir: path.join(dir, 'missing') });
    assert.equal(code, 2);
    assert.match(
      out,
      /^error: --state-dir .*missing: ENOENT.*; give the --state-dir of the serve that reads these manifests/,
    );
  });
  test('a read of the folder that fails is an error, not a report of what was read before it', async () => {
    // Regression: the failure was logged to no one, and the report said "0 valid resource(s),
    // 0 error(s)" with exit code 0.
    await writeFile(path.join(dir, 'z.yaml'), header.slice(0, -1).join('\n'));
    const inner = new LocalManifestParser();
    const parser: ManifestParser = {
      parse: async () => {
        throw new Error('the parse thread stopped');
      },
      locate: (token, requests) => inner.locate(token, requests),
      release: (token) => inner.release(token),
      close: () => inner.close(),
    };
    const stream = new PassThrough();
    let out = '';
    stream.on('data', (d) => (out += d));
    const code = await runValidate([dir], stream, { parser });
    assert.equal(code, 2);
    assert.match(out, /^error: reading .*: the parse thread stopped\n$/);
  });
  test("what a front door admits goes through JSON as in serve's parse threads: a BigInt fails the file, Infinity is null", async () => {
    // Regression: with a BigInt, validate stopped on the whole folder (exit 2, no report) while serve
    // failed only the file; with Infinity, validate refused a TTL that serve, reading null, served.
    const door = async (group: string, admit: string) => {
      const file = path.join(dir, `${group}.ts`);
      await writeFile(
        file,
        `import { dnsEndpointFrontDoor } from ${JSON.stringify(path.resolve(import.meta.dirname, '../api/frontdoors/externaldns/index.ts'))};\n` +
          `export const frontDoor = { ...dnsEndpointFrontDoor, group: "${group}", admit: (object) => { ${admit}; return []; } };\n`,
      );
      return file;
    };
    const doors = await loadFrontDoors([
      await door('bigint.example', 'object.spec.weight = 1n'),
      await door('inf.example', 'for (const e of object.spec.endpoints) e.recordTTL = Infinity'),
    ]);
    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(path.join(manifests, 'z.yaml'), header.slice(0, -1).join('\n'));
    const endpoint = (group: string) =>
      `apiVersion: ${group}/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: e, namespace: dns}\nspec: {endpoints: [{dnsName: www.example.com, recordType: A, targets: [192.0.2.1]}]}\n`;
    await writeFile(path.join(manifests, 'big.yaml'), endpoint('bigint.example'));
    await writeFile(path.join(manifests, 'inf.yaml'), endpoint('inf.example'));
    const stream = new PassThrough();
    let out = '';
    stream.on('data', (d) => (out += d));
    const code = await runValidate([manifests], stream, { frontDoors: doors });
    assert.equal(code, 1);
    assert.match(
      out,
      /^error: .*big\.yaml: cannot parse or check the file: .*BigInt.*\n3 valid resource\(s\), 1 error\(s\), 0 warning/,
    );
  });
  test('control and bidi characters from the manifests are printed escaped, never raw', async () => {
    // Regression: names, values and file names were printed as written, so a manifest could set the
    // terminal title, clear the screen or reorder the line of whoever ran `validate`.
    const hostile = '\u001b]0;pwned\u0007\u001b[2J\r\u009b1m\u202eevil\u2028x';
    const rs = (name: string, spec: string) =>
      [
        '---',
        'apiVersion: dns.zonekeeper.dev/v1alpha1',
        'kind: DNSRecordSet',
        `metadata: {name: ${JSON.stringify(name)}, namespace: dns}`,
        `spec: ${spec}`,
      ].join('\n');
    await writeFile(
      path.join(dir, `z${hostile.replace('\u2028', '')}.yaml`),
      [
        ...header.slice(0, -1),
        rs(`a${hostile}`, '{zoneRef: {name: z}, name: www, type: A, records: ["192.0.2.1"]}'),
        rs('b', `{zoneRef: {name: z}, name: ${JSON.stringify(`w${hostile}`)}, type: TXT, records: ["x"]}`),
        rs('c', `{zoneRef: {name: ${JSON.stringify(`z${hostile}`)}}, name: www, type: TXT, records: ["x"]}`),
        rs(
          'd',
          `{zoneRef: {name: z}, name: www, type: A, records: [${JSON.stringify(`192.0.2.1${hostile}`)}]}`,
        ),
        '',
      ].join('\n'),
    );
    const { code, out } = await validate([dir]);
    assert.equal(code, 1);
    const lines = out.trimEnd().split('\n');
    assert.equal(lines.filter((l) => l.startsWith('error: ')).length, 4, out);
    for (const line of lines) assert.doesNotMatch(line, UNSAFE, JSON.stringify(line));
    assert.match(
      out,
      /DNSRecordSet dns\/a\\x1b\]0;pwned\\x07\\x1b\[2J\\x0d\\x9b1m\\u\{202e\}evil\\u\{2028\}x metadata\.name/,
    );
    assert.match(out, /z\\x1b\]0;pwned.*\.yaml:\d+ \(document 4\)/);
  });
  test('two zones of one domain first seen together are both refused (Conflict), as serve judges them', async () => {
    // Regression: zones were set into the catalog one by one, so the first listed was "served" and only
    // the other refused; serve loads them in one batch, where equal creation times tie.
    await writeFile(
      path.join(dir, 'z.yaml'),
      [
        ...header,
        'apiVersion: dns.zonekeeper.dev/v1alpha1',
        'kind: DNSZone',
        'metadata: {name: z, namespace: other}',
        'spec: {domainName: example.com, className: builtin}',
        '',
      ].join('\n'),
    );
    const { code, out } = await validate([dir]);
    assert.equal(code, 1);
    const errors = out.split('\n').filter((l) => l.startsWith('error: '));
    assert.equal(errors.length, 2, out);
    assert.match(
      errors[0]!,
      /DNSZone dns\/z spec\.domainName: example\.com\. is also claimed by DNSZone other\/z, created at the same time/,
    );
    assert.match(
      errors[1]!,
      /DNSZone other\/z spec\.domainName: example\.com\. is also claimed by DNSZone dns\/z, created at the same time/,
    );
  });
});
