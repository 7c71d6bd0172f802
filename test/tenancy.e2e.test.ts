import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import {
  CLI,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

/**
 * Tenancy as a hostile namespace would try it, against the real `zonekeeper serve` and dig: a newer
 * zone above an older zone of another namespace (ZoneShadowed), names with escaped dots against a
 * delegation, public suffixes, and wildcard NS.
 */

const HEADER = 'apiVersion: dns.zonekeeper.dev/v1alpha1';

const BASE = `${HEADER}
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.net.]
---
${HEADER}
kind: DNSZone
metadata: { name: a-b, namespace: dns }
spec: { domainName: a.b.example.net, className: builtin }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: www-a-b, namespace: dns }
spec: { zoneRef: { name: a-b }, name: www, type: A, records: ["192.0.2.10"] }
---
${HEADER}
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec:
  domainName: example.com
  className: builtin
  delegations:
    - { namespaces: [team-a], names: ["*.apps"], types: [A] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: www, namespace: dns }
spec: { zoneRef: { name: example-com }, name: www, type: A, records: ["192.0.2.1"] }
`;

/** team-c's newer zone above dns/a-b, with records meant to take its names over. */
function teamC(delegations: string): string {
  return `${HEADER}
kind: DNSZone
metadata: { name: b, namespace: team-c }
spec:
  domainName: b.example.net
  className: builtin
  delegations: ${delegations}
---
${HEADER}
kind: DNSRecordSet
metadata: { name: star-a, namespace: team-c }
spec: { zoneRef: { name: b }, name: "*.a", type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: ns-a, namespace: team-c }
spec: { zoneRef: { name: b }, name: a, type: NS, records: [ns.attacker.example.] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: apex, namespace: team-c }
spec: { zoneRef: { name: b }, name: "@", type: TXT, records: ["team-c"] }
`;
}

interface Item {
  kind: string;
  metadata: { name: string; namespace?: string };
  status?: {
    conditions?: {
      type: string;
      status: string;
      reason: string;
      message: string;
      lastTransitionTime?: string;
    }[];
  };
}

describe('tenancy: zones and names another namespace must not take over (zonekeeper serve + dig)', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  async function accepted(
    kind: string,
    key: string,
  ): Promise<{ status: string; reason: string; message: string } | undefined> {
    const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] };
    const item = body.items.find(
      (i) => i.kind === kind && `${i.metadata.namespace}/${i.metadata.name}` === key,
    );
    return item?.status?.conditions?.find((c) => c.type === 'Accepted');
  }

  /** Waits until the resource's Accepted condition has this reason, and returns it. */
  async function until(kind: string, key: string, reason: string) {
    const { value } = await waitFor(async () => {
      const c = await accepted(kind, key);
      return c?.reason === reason ? c : undefined;
    });
    return value;
  }

  before(async () => {
    manifests = await tempDir('tenancy');
    state = await tempDir('tenancy-state');
    await writeFile(path.join(manifests, 'base.yaml'), BASE);
    serve = await startServe(manifests, state);
  });
  after(async () => {
    await serve?.stop();
    await removeAll(manifests, state);
  });

  test('a newer parent zone from another namespace is ZoneShadowed until it delegates; the older zone keeps serving', async () => {
    const www = await dig(serve.dnsPort, 'www.a.b.example.net', 'A');
    assert.deepEqual(rdataOf(www, 'A'), ['192.0.2.10']);
    assert.ok(www.flags.includes('aa'));

    const file = path.join(manifests, 'team-c.yaml');
    await writeFile(file, teamC('[]'));
    const shadowed = await until('DNSZone', 'team-c/b', 'ZoneShadowed');
    assert.equal(shadowed.status, 'False');
    assert.match(shadowed.message, /DNSZone dns\/a-b/);
    assert.match(shadowed.message, /\{namespaces: \[dns\], names: \[a\], types: \[NS\]\}/);
    assert.equal((await accepted('DNSZone', 'dns/a-b'))?.reason, 'Accepted');
    assert.match(
      (await accepted('DNSRecordSet', 'team-c/star-a'))?.message ?? '',
      /is refused \(ZoneShadowed\)/,
    );

    for (const tool of ['dig', 'kdig'] as const) {
      const still = await dig(serve.dnsPort, 'www.a.b.example.net', 'A', { tool });
      assert.equal(still.status, 'NOERROR', still.raw);
      assert.ok(still.flags.includes('aa'), still.raw);
      assert.deepEqual(rdataOf(still, 'A'), ['192.0.2.10'], `${tool}: the older zone keeps its name`);
    }
    const other = await dig(serve.dnsPort, 'other.a.b.example.net', 'A');
    assert.equal(other.status, 'NXDOMAIN', 'no wildcard of the newer zone answers in the older one');
    assert.match(other.authority[0] ?? '', /^a\.b\.example\.net\. \d+ IN SOA /);
    const ns = await dig(serve.dnsPort, 'a.b.example.net', 'NS');
    assert.deepEqual(rdataOf(ns, 'NS'), ['ns1.example.net.'], 'not a referral to the newer zone’s servers');
    assert.ok(ns.flags.includes('aa'));
    assert.equal(
      (await dig(serve.dnsPort, 'b.example.net', 'TXT')).status,
      'REFUSED',
      'the shadowed zone is not served',
    );

    // With the delegation the parent is served above the child; the child's names stay the child's.
    await writeFile(file, teamC('[{ namespaces: [dns], names: [a], types: [NS] }]'));
    await until('DNSZone', 'team-c/b', 'Accepted');
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'b.example.net', 'TXT'), 'TXT').join() === '"team-c"'
        ? true
        : undefined,
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'www.a.b.example.net', 'A'), 'A'), ['192.0.2.10']);
    assert.equal((await dig(serve.dnsPort, 'other.a.b.example.net', 'A')).status, 'NXDOMAIN');
    assert.equal((await accepted('DNSRecordSet', 'team-c/ns-a'))?.reason, 'OutOfZone');
    assert.equal((await accepted('DNSRecordSet', 'team-c/star-a'))?.reason, 'OutOfZone');

    // Withdrawn again: refused again, at once.
    await writeFile(file, teamC('[]'));
    await until('DNSZone', 'team-c/b', 'ZoneShadowed');
    await waitFor(async () =>
      (await dig(serve.dnsPort, 'b.example.net', 'TXT')).status === 'REFUSED' ? true : undefined,
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'www.a.b.example.net', 'A'), 'A'), ['192.0.2.10']);
    await rm(file);
  });

  test('an escaped dot does not pass for a label separator: *.apps admits neither evil\\.apps nor www\\046apps', async () => {
    const dir = path.join(manifests, 'team-a');
    await mkdir(dir, { recursive: true });
    await writeFile(
      path.join(dir, 'records.yaml'),
      `${HEADER}
kind: DNSRecordSet
metadata: { name: escaped, namespace: team-a }
spec: { zoneRef: { name: example-com, namespace: dns }, name: 'evil\\.apps', type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: decimal, namespace: team-a }
spec: { name: 'www\\046apps.example.com.', type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: decimal-ref, namespace: team-a }
spec: { zoneRef: { name: example-com, namespace: dns }, name: 'x\\046apps', type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: web, namespace: team-a }
spec: { zoneRef: { name: example-com, namespace: dns }, name: web.apps, type: A, records: ["192.0.2.80"] }
`,
    );
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'web.apps.example.com', 'A'), 'A').join() === '192.0.2.80'
        ? true
        : undefined,
    );
    for (const key of ['team-a/escaped', 'team-a/decimal', 'team-a/decimal-ref']) {
      const c = await until('DNSRecordSet', key, 'NotDelegated');
      assert.match(c.message, /does not delegate (evil|www|x)\\\.apps A to namespace team-a/, key);
    }
    for (const name of ['evil\\.apps.example.com', 'www\\.apps.example.com', 'x\\046apps.example.com']) {
      const r = await dig(serve.dnsPort, name, 'A');
      assert.equal(r.status, 'NXDOMAIN', `${name}: ${r.raw}`);
      assert.deepEqual(r.answer, []);
    }
  });

  test('a zone for a public suffix is refused (PublicSuffix); a zone below it is served', async () => {
    const file = path.join(manifests, 'suffix.yaml');
    await writeFile(
      file,
      `${HEADER}
kind: DNSZone
metadata: { name: co-uk, namespace: team-c }
spec: { domainName: co.uk, className: builtin }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: star, namespace: team-c }
spec: { zoneRef: { name: co-uk }, name: "*", type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSZone
metadata: { name: shop, namespace: shop }
spec: { domainName: shop.co.uk, className: builtin }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: www, namespace: shop }
spec: { zoneRef: { name: shop }, name: www, type: A, records: ["192.0.2.44"] }
`,
    );
    const refused = await until('DNSZone', 'team-c/co-uk', 'PublicSuffix');
    assert.match(refused.message, /co\.uk\. is a public suffix \(ICANN section of the Public Suffix List\)/);
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'www.shop.co.uk', 'A'), 'A').join() === '192.0.2.44'
        ? true
        : undefined,
    );
    assert.equal((await dig(serve.dnsPort, 'anything.co.uk', 'A')).status, 'REFUSED');
    await rm(file);
  });

  test('a wildcard NS record set is refused with RFC 4592 §4.2; the zone answers as before', async () => {
    const file = path.join(manifests, 'wildcard-ns.yaml');
    await writeFile(
      file,
      `${HEADER}
kind: DNSRecordSet
metadata: { name: wild-ns, namespace: dns }
spec: { zoneRef: { name: example-com }, name: "*.wild", type: NS, records: [ns.elsewhere.example.] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: wild-ns-escaped, namespace: dns }
spec: { zoneRef: { name: example-com }, name: '\\042.tame', type: NS, records: [ns.elsewhere.example.] }
`,
    );
    const problem = await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        problems: { file: string; path?: string; message: string }[];
      };
      return body.problems.find((p) => p.file === file);
    });
    assert.equal(problem.value.path, 'spec.name');
    assert.match(problem.value.message, /RFC 4592 §4\.2/);
    const escaped = await until('DNSRecordSet', 'dns/wild-ns-escaped', 'Invalid');
    assert.match(escaped.message, /RFC 4592 §4\.2/);
    for (const name of ['x.wild.example.com', 'x.tame.example.com']) {
      const r = await dig(serve.dnsPort, name, 'A');
      assert.equal(r.status, 'NXDOMAIN', `${name}: ${r.raw}`);
      assert.ok(r.flags.includes('aa'), 'an authoritative answer, not a referral');
    }
    await rm(file);
  });
});

interface Condition {
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

/** The Accepted condition of a resource, as `serve` shows it on /api/v1/resources. */
async function acceptedOf(serve: ServeProcess, kind: string, key: string): Promise<Condition | undefined> {
  const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] };
  const item = body.items.find(
    (i) => i.kind === kind && `${i.metadata.namespace}/${i.metadata.name}` === key,
  );
  return item?.status?.conditions?.find((c) => c.type === 'Accepted');
}

/** Waits until the condition satisfies `done`, and returns it. */
async function untilCondition(
  serve: ServeProcess,
  kind: string,
  key: string,
  done: (c: Condition) => boolean,
): Promise<Condition> {
  const { value } = await waitFor(async () => {
    const c = await acceptedOf(serve, kind, key);
    return c && done(c) ? c : undefined;
  });
  return value;
}

const CLASS_ONLY = `${HEADER}
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.net.]
`;

function zoneYaml(namespace: string, name: string, domain: string, extra = ''): string {
  return `${HEADER}
kind: DNSZone
metadata: { name: ${name}, namespace: ${namespace} }
spec:
  domainName: ${domain}
  className: builtin
${extra}`;
}

function recordYaml(namespace: string, name: string, spec: string): string {
  return `${HEADER}
kind: DNSRecordSet
metadata: { name: ${name}, namespace: ${namespace} }
spec: ${spec}
`;
}

const docs = (...parts: string[]) => parts.join('---\n');

/** Runs the zonekeeper CLI (validate, zone export) and returns its exit code and output. */
async function zonekeeper(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [CLI, ...args]).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

describe('tenancy: a zone that is served keeps serving against older zones that were not (zonekeeper serve + dig)', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    manifests = await tempDir('tenancy-incumbent');
    state = await tempDir('tenancy-incumbent-state');
    await writeFile(path.join(manifests, 'class.yaml'), CLASS_ONLY);
    serve = await startServe(manifests, state);
  });
  after(async () => {
    await serve?.stop();
    await removeAll(manifests, state);
  });

  async function answers(name: string, address: string): Promise<void> {
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, name, 'A'), 'A').join() === address ? true : undefined,
    );
  }

  const evilVictim = (className: string) =>
    docs(
      zoneYaml('evil', 'victim', 'victim.test').replace('className: builtin', `className: ${className}`),
      recordYaml('evil', 'www', '{ zoneRef: { name: victim }, name: www, type: A, records: ["6.6.6.6"] }'),
    );

  test('same domain: an older zone that was refused cannot push out the newer zone served meanwhile', async () => {
    const evil = path.join(manifests, 'evil-victim.yaml');
    await writeFile(evil, evilVictim('not-yet'));
    await untilCondition(serve, 'DNSZone', 'evil/victim', (c) => c.reason === 'ClassNotFound');
    await writeFile(
      path.join(manifests, 'team-a-victim.yaml'),
      docs(
        zoneYaml('team-a', 'victim', 'victim.test'),
        recordYaml(
          'team-a',
          'www',
          '{ zoneRef: { name: victim }, name: www, type: A, records: ["192.0.2.1"] }',
        ),
      ),
    );
    await answers('www.victim.test', '192.0.2.1');

    // evil changes only its class.
    await writeFile(evil, evilVictim('builtin'));
    const refused = await untilCondition(
      serve,
      'DNSZone',
      'evil/victim',
      (c) => c.reason !== 'ClassNotFound',
    );
    assert.equal(refused.reason, 'Conflict', refused.message);
    assert.match(refused.message, /already served by DNSZone team-a\/victim/);
    assert.equal((await acceptedOf(serve, 'DNSZone', 'team-a/victim'))?.reason, 'Accepted');
    for (const tool of ['dig', 'kdig'] as const) {
      const www = await dig(serve.dnsPort, 'www.victim.test', 'A', { tool });
      assert.ok(www.flags.includes('aa'), www.raw);
      assert.deepEqual(rdataOf(www, 'A'), ['192.0.2.1'], `${tool}: ${www.raw}`);
    }
  });

  test('after a restart with the same --state-dir, the zone that was served keeps serving', async () => {
    // Continues the previous test: evil's older victim.test is refused, team-a's newer one is served.
    const since = (await acceptedOf(serve, 'DNSZone', 'team-a/victim'))?.lastTransitionTime;
    assert.ok(since);
    await serve.stop();
    serve = await startServe(manifests, state);
    await answers('www.victim.test', '192.0.2.1');
    const teamA = await acceptedOf(serve, 'DNSZone', 'team-a/victim');
    assert.equal(teamA?.reason, 'Accepted', teamA?.message);
    assert.equal(teamA?.lastTransitionTime, since, 'served since before the restart');
    const evil = await acceptedOf(serve, 'DNSZone', 'evil/victim');
    assert.equal(evil?.reason, 'Conflict', evil?.message);
    assert.match(evil?.message ?? '', /already served by DNSZone team-a\/victim/);
    for (const tool of ['dig', 'kdig'] as const) {
      const www = await dig(serve.dnsPort, 'www.victim.test', 'A', { tool });
      assert.ok(www.flags.includes('aa'), www.raw);
      assert.deepEqual(rdataOf(www, 'A'), ['192.0.2.1'], `${tool}: ${www.raw}`);
    }
  });

  test('validate --state-dir and zone export --state-dir judge the zone that was served as serve does', async () => {
    // Continues the restart test: serve (running) serves team-a's newer victim.test, evil's is Conflict.
    assert.equal((await acceptedOf(serve, 'DNSZone', 'team-a/victim'))?.reason, 'Accepted');
    const checked = await zonekeeper(['validate', '--state-dir', state, manifests]);
    const zoneErrors = checked.stdout.split('\n').filter((l) => /^error: .*DNSZone /.test(l));
    assert.equal(zoneErrors.length, 1, checked.stdout);
    assert.match(
      zoneErrors[0]!,
      /DNSZone evil\/victim spec\.domainName: victim\.test\. is already served by DNSZone team-a\/victim/,
    );
    const exported = await zonekeeper([
      'zone',
      'export',
      '--manifests',
      manifests,
      '--state-dir',
      state,
      '--zone',
      'victim.test',
    ]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stdout, /^www\.victim\.test\.\s+\d+\s+IN\s+A\s+192\.0\.2\.1$/m, exported.stdout);
  });

  test('parent: an older zone that was refused cannot later take over a zone served below it', async () => {
    await writeFile(
      path.join(manifests, 'team-b.yaml'),
      docs(
        zoneYaml('team-b', 'b', 'b.example.test'),
        recordYaml('team-b', 'www', '{ zoneRef: { name: b }, name: www, type: A, records: ["192.0.2.2"] }'),
      ),
    );
    await answers('www.b.example.test', '192.0.2.2');
    const evil = path.join(manifests, 'evil-parent.yaml');
    const evilParent = (delegations: string) =>
      docs(
        zoneYaml('evil', 'parent', 'example.test', `  delegations: ${delegations}\n`),
        recordYaml('evil', 'star', '{ zoneRef: { name: parent }, name: "*", type: A, records: ["6.6.6.6"] }'),
      );
    await writeFile(evil, evilParent('[]'));
    const shadowed = await untilCondition(
      serve,
      'DNSZone',
      'evil/parent',
      (c) => c.reason === 'ZoneShadowed',
    );
    assert.match(shadowed.message, /DNSZone team-b\/b/);
    await writeFile(
      path.join(manifests, 'team-a.yaml'),
      docs(
        zoneYaml('team-a', 'a', 'a.example.test'),
        recordYaml('team-a', 'www-a', '{ zoneRef: { name: a }, name: www, type: A, records: ["192.0.2.1"] }'),
      ),
    );
    await answers('www.a.example.test', '192.0.2.1');

    // evil adds exactly the delegation its message asked for.
    await writeFile(evil, evilParent('[{ namespaces: [team-b], names: [b], types: [NS] }]'));
    const still = await untilCondition(
      serve,
      'DNSZone',
      'evil/parent',
      (c) => c.reason !== 'ZoneShadowed' || !c.message.includes('team-b/b'),
    );
    assert.equal(still.reason, 'ZoneShadowed', still.message);
    assert.match(still.message, /already served by DNSZone team-a\/a of namespace team-a/);
    assert.equal((await acceptedOf(serve, 'DNSZone', 'team-a/a'))?.reason, 'Accepted');
    for (const tool of ['dig', 'kdig'] as const) {
      const www = await dig(serve.dnsPort, 'www.a.example.test', 'A', { tool });
      assert.ok(www.flags.includes('aa'), www.raw);
      assert.deepEqual(rdataOf(www, 'A'), ['192.0.2.1'], `${tool}: ${www.raw}`);
    }
    assert.equal((await dig(serve.dnsPort, 'other.example.test', 'A')).status, 'REFUSED');
    await rm(evil);
  });

  test('a parent that consents to a zone below it cannot publish NS or CNAME above that zone', async () => {
    await writeFile(
      path.join(manifests, 'team-a-ab.yaml'),
      docs(
        zoneYaml('team-a', 'a-b', 'a.b.example.org'),
        recordYaml(
          'team-a',
          'www-ab',
          '{ zoneRef: { name: a-b }, name: www, type: A, records: ["192.0.2.1"] }',
        ),
      ),
    );
    await answers('www.a.b.example.org', '192.0.2.1');
    const evil = path.join(manifests, 'evil-org.yaml');
    await writeFile(
      evil,
      docs(
        zoneYaml(
          'evil',
          'org',
          'example.org',
          '  delegations: [{ namespaces: [team-a], names: [a.b], types: [NS] }]\n',
        ),
        recordYaml('evil', 'apex', '{ zoneRef: { name: org }, name: "@", type: TXT, records: ["evil"] }'),
        recordYaml(
          'evil',
          'ns-b',
          '{ zoneRef: { name: org }, name: b, type: NS, records: [ns.evil.invalid.] }',
        ),
        recordYaml('evil', 'cname-b', '{ name: b.example.org., type: CNAME, records: [elsewhere.invalid.] }'),
      ),
    );
    await untilCondition(serve, 'DNSZone', 'evil/org', (c) => c.reason === 'Accepted');
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'example.org', 'TXT'), 'TXT').join() === '"evil"' ? true : undefined,
    );
    for (const key of ['evil/ns-b', 'evil/cname-b']) {
      const c = await untilCondition(serve, 'DNSRecordSet', key, (c) => c.reason !== 'Pending');
      assert.equal(c.reason, 'Conflict', `${key}: ${c.message}`);
      assert.match(c.message, /DNSZone team-a\/a-b/, key);
    }
    for (const tool of ['dig', 'kdig'] as const) {
      // Not a referral to evil's servers above team-a's zone: an authoritative NXDOMAIN from evil's zone.
      const below = await dig(serve.dnsPort, 'x.b.example.org', 'A', { tool });
      assert.equal(below.status, 'NXDOMAIN', `${tool}: ${below.raw}`);
      assert.ok(below.flags.includes('aa'), below.raw);
      const atB = await dig(serve.dnsPort, 'b.example.org', 'NS', { tool });
      assert.equal(atB.status, 'NOERROR', atB.raw);
      assert.ok(atB.flags.includes('aa'), `${tool}: not a referral: ${atB.raw}`);
      assert.deepEqual(atB.answer, [], atB.raw);
      const www = await dig(serve.dnsPort, 'www.a.b.example.org', 'A', { tool });
      assert.deepEqual(rdataOf(www, 'A'), ['192.0.2.1'], www.raw);
      assert.ok(www.flags.includes('aa'), www.raw);
    }
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'b.example.org', 'A'), 'CNAME'), []);
    await rm(evil);
  });
});

describe('validate and zone export judge zones as serve does; a zone refused for its manifest (zonekeeper serve + dig)', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    manifests = await tempDir('tenancy-judge');
    state = await tempDir('tenancy-judge-state');
    await writeFile(path.join(manifests, 'class.yaml'), CLASS_ONLY);
    // First seen in one load: the two zones of tie.test have the same creation time.
    await writeFile(
      path.join(manifests, 'tie.yaml'),
      docs(
        zoneYaml('tie-a', 't', 'tie.test'),
        recordYaml('tie-a', 'www', '{ zoneRef: { name: t }, name: www, type: A, records: ["192.0.2.1"] }'),
        zoneYaml('tie-b', 't', 'tie.test'),
        recordYaml('tie-b', 'www', '{ zoneRef: { name: t }, name: www, type: A, records: ["6.6.6.6"] }'),
      ),
    );
    serve = await startServe(manifests, state);
  });
  after(async () => {
    await serve?.stop();
    await removeAll(manifests, state);
  });

  test('two zones of one domain created at the same time: serve, validate and zone export refuse both', async () => {
    for (const key of ['tie-a/t', 'tie-b/t']) {
      const c = await untilCondition(serve, 'DNSZone', key, (c) => c.reason !== 'Pending');
      assert.equal(c.reason, 'Conflict', `${key}: ${c.message}`);
      assert.match(c.message, /created at the same time/, key);
    }
    assert.equal((await dig(serve.dnsPort, 'www.tie.test', 'A')).status, 'REFUSED');
    // Before: validate and zone export set the zones one by one, so the first listed was served.
    for (const args of [
      ['validate', manifests],
      ['validate', '--state-dir', state, manifests],
    ]) {
      const checked = await zonekeeper(args);
      assert.equal(checked.code, 1, checked.stdout);
      const zoneErrors = checked.stdout.split('\n').filter((l) => /^error: .*DNSZone /.test(l));
      assert.equal(zoneErrors.length, 2, `${args.join(' ')}:\n${checked.stdout}`);
      for (const [i, key] of ['tie-a/t', 'tie-b/t'].entries()) {
        assert.match(
          zoneErrors[i]!,
          new RegExp(`DNSZone ${key} spec\\.domainName: .*created at the same time`),
        );
      }
    }
    const exported = await zonekeeper([
      'zone',
      'export',
      '--manifests',
      manifests,
      '--state-dir',
      state,
      '--zone',
      'tie.test',
    ]);
    assert.equal(exported.code, 1, exported.stdout);
    assert.match(exported.stderr, /DNSZone tie-a\/t is not served \(Conflict\): .*created at the same time/);
    assert.match(exported.stderr, /DNSZone tie-b\/t is not served \(Conflict\): .*created at the same time/);
  });

  test('a record set naming a zone whose manifest never validated says the zone is refused and why, as validate does', async () => {
    const zoneFile = path.join(manifests, 'broken.yaml');
    await writeFile(
      path.join(manifests, 'rs.yaml'),
      recordYaml('dns', 'www', '{ zoneRef: { name: broken }, name: www, type: A, records: ["192.0.2.7"] }'),
    );
    await writeFile(zoneFile, zoneYaml('dns', 'broken', 'z3..example'));
    // Before: "DNSZone dns/broken (spec.zoneRef) does not exist".
    const refused = await untilCondition(serve, 'DNSRecordSet', 'dns/www', (c) =>
      /is refused/.test(c.message),
    );
    assert.equal(refused.reason, 'ZoneNotFound', refused.message);
    assert.match(
      refused.message,
      /^DNSZone dns\/broken \(spec\.zoneRef\) is refused: spec\.domainName: .*empty label/,
    );
    const checked = await zonekeeper(['validate', '--state-dir', state, manifests]);
    const warning = checked.stdout.split('\n').find((l) => l.includes('DNSRecordSet dns/www'));
    assert.ok(warning?.endsWith(refused.message), `validate: ${warning}\nserve: ${refused.message}`);

    // Fixed: served; the zone's file removed instead: the zone does not exist.
    await writeFile(zoneFile, zoneYaml('dns', 'broken', 'broken.test'));
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'www.broken.test', 'A'), 'A').join() === '192.0.2.7'
        ? true
        : undefined,
    );
    await rm(zoneFile);
    const gone = await untilCondition(serve, 'DNSRecordSet', 'dns/www', (c) => c.reason !== 'Accepted');
    assert.match(gone.message, /DNSZone dns\/broken \(spec\.zoneRef\) does not exist/);
    await writeFile(zoneFile, zoneYaml('dns', 'broken', 'z3..example'));
    await untilCondition(serve, 'DNSRecordSet', 'dns/www', (c) => /is refused/.test(c.message));
    await rm(zoneFile);
    await untilCondition(serve, 'DNSRecordSet', 'dns/www', (c) => /does not exist/.test(c.message));
  });
});
