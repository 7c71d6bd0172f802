import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, test } from 'node:test';
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
});
