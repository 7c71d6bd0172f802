/**
 * A complete ACME DNS-01 issuance, offline: Pebble (Let's Encrypt's ACME test server, Go module
 * github.com/letsencrypt/pebble, pinned in the Go module test/gotools/) resolves through `zonekeeper serve`,
 * and certbot with its `dns-rfc2136` plugin (Python packages `certbot`, `certbot-dns-rfc2136`, in a
 * virtualenv under ~/.cache/zonekeeper, test/support/certbot.ts) writes the `_acme-challenge` TXT record into Zonekeeper by
 * RFC 2136 UPDATE with an update-only key that `_acme-challenge.**` grants, and deletes it after.
 * Everything on loopback.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { certbot } from './support/certbot.ts';
import { dig } from './support/dig.ts';
import { goModuleDir, goProgram, PEBBLE_PROGRAM } from './support/go-programs.ts';
import { freePort } from './support/ports.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
let PEBBLE = '';
let CERTBOT = '';
const SECRET = randomBytes(32).toString('base64');

/** Builds Pebble and installs certbot (once; both are cached outside the clone). */
async function prepare(): Promise<string> {
  [PEBBLE, CERTBOT] = await Promise.all([goProgram(PEBBLE_PROGRAM), certbot()]);
  // Pebble's test certificates (its HTTPS listener's and the CA clients must trust) ship in the module.
  return path.join(await goModuleDir('github.com/letsencrypt/pebble/v2'), 'test/certs');
}

function logOf(child: ChildProcess): () => string {
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  return () => out;
}

describe('ACME DNS-01 issuance: certbot writes the challenge into zonekeeper by UPDATE, Pebble checks it', () => {
  let dir: string;
  let stateDir: string;
  let serve: ServeProcess;
  let pebble: ChildProcess | undefined;
  let pebbleLog: () => string = () => '';
  let pebblePort: number;
  let certs: string;

  before(
    async () => {
      certs = await prepare();
      dir = await tempDir('acme');
      stateDir = await tempDir('acme-state');
      await writeFile(path.join(dir, 'acme.key'), SECRET);
      const manifests = path.join(dir, 'manifests');
      await mkdir(manifests);
      await writeFile(
        path.join(manifests, 'zone.yaml'),
        `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.com.]
  transfers:
    tsigKeys:
      - { name: acme-key, algorithm: hmac-sha256, secretRef: { file: ${JSON.stringify(path.join(dir, 'acme.key'))} }, usage: [update] }
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec:
  domainName: example.com
  className: builtin
  updatePolicy:
    - { key: acme-key, names: ["_acme-challenge.**"], types: [TXT] }
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: www, namespace: dns }
spec:
  zoneRef: { name: example-com }
  name: www
  type: A
  records: [192.0.2.80]
`,
      );
      serve = await startServe(manifests, stateDir);
      pebblePort = await freePort();
      const config = path.join(dir, 'pebble.json');
      await writeFile(
        config,
        JSON.stringify({
          pebble: {
            listenAddress: `127.0.0.1:${pebblePort}`,
            managementListenAddress: `127.0.0.1:${await freePort()}`,
            certificate: path.join(certs, 'localhost/cert.pem'),
            privateKey: path.join(certs, 'localhost/key.pem'),
            httpPort: await freePort(),
            tlsPort: await freePort(),
            ocspResponderURL: '',
            externalAccountBindingRequired: false,
          },
        }),
      );
      pebble = spawn(PEBBLE, ['-config', config, '-dnsserver', `127.0.0.1:${serve.dnsPort}`], {
        // No sleeps before validation, no rejected nonces, no reused authorizations: a quick, exact run.
        env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      pebbleLog = logOf(pebble);
      await waitFor(async () => (/Listening on/.test(pebbleLog()) ? true : undefined), 20_000);
      // A hook that timed out would go on after `after` ran and leave serve and Pebble running (the file's
      // process then never ends): the time limit covers a cold build of Pebble and certbot's install, run
      // alone; `npm test` prepares both before the suites start (test/support/prepare-tools.ts).
    },
    { timeout: 30 * 60_000 },
  );

  after(async () => {
    pebble?.kill('SIGTERM');
    await serve?.stop();
    if (dir) await removeAll(dir, stateDir);
  });

  test('certbot certonly --authenticator dns-rfc2136 obtains a certificate for www.example.com', async () => {
    const credentials = path.join(dir, 'rfc2136.ini');
    await writeFile(
      credentials,
      [
        'dns_rfc2136_server = 127.0.0.1',
        `dns_rfc2136_port = ${serve.dnsPort}`,
        'dns_rfc2136_name = acme-key',
        `dns_rfc2136_secret = ${SECRET}`,
        'dns_rfc2136_algorithm = HMAC-SHA256',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const work = path.join(dir, 'certbot');
    let output = '';
    try {
      const r = await run(
        CERTBOT,
        [
          'certonly',
          '--non-interactive',
          '--agree-tos',
          '--register-unsafely-without-email',
          '--server',
          `https://localhost:${pebblePort}/dir`,
          '--authenticator',
          'dns-rfc2136',
          '--dns-rfc2136-credentials',
          credentials,
          '--dns-rfc2136-propagation-seconds',
          '1',
          '-d',
          'www.example.com',
          '--config-dir',
          path.join(work, 'config'),
          '--work-dir',
          path.join(work, 'work'),
          '--logs-dir',
          path.join(work, 'logs'),
        ],
        {
          env: { ...process.env, REQUESTS_CA_BUNDLE: path.join(certs, 'pebble.minica.pem') },
          timeout: 180_000,
        },
      );
      output = r.stdout + r.stderr;
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      assert.fail(
        `certbot failed:\n${err.stdout}\n${err.stderr}\npebble:\n${pebbleLog()}\nzonekeeper:\n${serve.log()}`,
      );
    }
    assert.match(output, /Successfully received certificate/);
    const cert = await readFile(path.join(work, 'config/live/www.example.com/cert.pem'), 'utf8');
    assert.match(cert, /BEGIN CERTIFICATE/);
    // Pebble checked the challenge through Zonekeeper, and certbot cleaned it up again.
    assert.match(pebbleLog(), /_acme-challenge|validat/i);
    const txt = await dig(serve.dnsPort, '_acme-challenge.www.example.com.', 'TXT');
    assert.equal(txt.answer.filter((l) => l.split(' ')[3] === 'TXT').length, 0, txt.raw);
  });
});
