/**
 * A real Kubernetes control plane for tests, started the way envtest starts one: etcd and
 * kube-apiserver on loopback, ephemeral ports, a temporary data directory, a throwaway CA and serving
 * certificate, static token authentication, RBAC authorization and service-account signing keys. No
 * controller manager, scheduler or kubelet: objects are stored and validated (schema, CEL, RBAC) but
 * no pods run. The binaries come from scripts/ensure-k8s-binaries.sh (built from Go modules, cached
 * outside the clone); `kubectl` is the machine's when its version is close enough, else the one
 * built beside kube-apiserver.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';

/** The group of Datum Cloud's DNS kinds, whose CRDs are not part of the default install. */
export const DATUM_CRD_GROUP = 'dns.networking.miloapis.com';

const execFileP = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

export const K8S_VERSION = process.env.ZONEKEEPER_K8S_VERSION ?? '1.33.13';

/** Where ensure-k8s-binaries.sh puts the binaries of K8S_VERSION. */
export function k8sBinDir(): string {
  if (process.env.ZONEKEEPER_K8S_BIN) return process.env.ZONEKEEPER_K8S_BIN;
  const cache = process.env.ZONEKEEPER_CACHE ?? path.join(homedir(), '.cache', 'zonekeeper');
  return path.join(cache, 'k8s', `v${K8S_VERSION}`);
}

/**
 * The binaries, built when missing (that takes 10-20 minutes on 2 cores; `npm test` runs the script
 * first, so a test only builds when run on its own on a fresh machine).
 */
export function ensureK8sBinaries(): string {
  const dir = k8sBinDir();
  if (['kube-apiserver', 'etcd', 'helm'].every((b) => existsSync(path.join(dir, b)))) return dir;
  const r = spawnSync('bash', [path.join(ROOT, 'scripts/ensure-k8s-binaries.sh')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`scripts/ensure-k8s-binaries.sh failed (exit ${r.status})`);
  return dir;
}

/** A user of the test cluster, authenticated by a static token. */
export interface KubeUser {
  name: string;
  groups: string[];
}

export const ADMIN: KubeUser = { name: 'zonekeeper-test-admin', groups: ['system:masters'] };

/** The identity a pod of this service account would have (RBAC bindings to the SA match it). */
export function serviceAccountUser(namespace: string, name: string): KubeUser {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
  };
}

/**
 * A real service-account token from the API server's TokenRequest API (what the kubelet puts in a
 * projected volume), minted as the admin. The ServiceAccount must exist. Without `audience` it has
 * the API server's own audience (its --service-account-issuer), like a pod's normal token.
 */
export async function serviceAccountToken(
  kube: KubeCluster,
  namespace: string,
  name: string,
  options: { audience?: string; durationSeconds?: number } = {},
): Promise<string> {
  const args = ['create', 'token', name, '-n', namespace];
  if (options.audience !== undefined) args.push('--audience', options.audience);
  args.push('--duration', `${options.durationSeconds ?? 3600}s`);
  return (await kube.kubectlOk(args)).trim();
}

/** The status of a GET to the API server with `token` as the bearer (0 when it cannot be reached). */
export async function apiServerStatus(kube: KubeCluster, apiPath: string, token: string): Promise<number> {
  return httpsStatus(`${kube.server}${apiPath}`, token, await readFile(path.join(kube.dir, 'pki', 'ca.crt')));
}

/** Writes a token where `zonekeeper server --write-token-file` reads it; returns the path. */
export async function writeTokenFile(kube: KubeCluster, file: string, token: string): Promise<string> {
  const target = path.join(kube.dir, file);
  await writeFile(target, `${token}\n`);
  return target;
}

export interface KubectlResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface KubeCluster {
  server: string;
  dir: string;
  binDir: string;
  /** The kube-apiserver's process ID (to stop, freeze or kill it in a test). */
  apiServerPid: number;
  /** The kubeconfig of the admin user (system:masters). */
  adminKubeconfig: string;
  kubectlPath: string;
  /** A kubeconfig for `user`, which must be one of those passed to startKube. */
  kubeconfigFor(user: KubeUser): string;
  /** Runs kubectl (admin unless `kubeconfig` is given); never throws on a non-zero exit. */
  kubectl(
    args: string[],
    options?: { input?: string; kubeconfig?: string; timeoutMs?: number },
  ): Promise<KubectlResult>;
  /** Like kubectl, but throws with stderr when it fails. */
  kubectlOk(
    args: string[],
    options?: { input?: string; kubeconfig?: string; timeoutMs?: number },
  ): Promise<string>;
  logs(): string;
  stop(): Promise<void>;
}

function kubeconfigYaml(server: string, ca: string, user: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: test`,
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority: ${ca}`,
    'users:',
    `- name: ${JSON.stringify(user)}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: test',
    '  context:',
    '    cluster: test',
    `    user: ${JSON.stringify(user)}`,
    'current-context: test',
    '',
  ].join('\n');
}

/** The kubectl built beside kube-apiserver (same version) if any, else the machine's if its minor version is within one of the API server's. */
function pickKubectl(binDir: string): string {
  const built = path.join(binDir, 'kubectl');
  if (existsSync(built)) return built;
  const minor = Number(K8S_VERSION.split('.')[1]);
  const r = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  if (r.status === 0) {
    try {
      const v = JSON.parse(r.stdout) as { clientVersion?: { minor?: string } };
      const m = Number.parseInt(v.clientVersion?.minor ?? '', 10);
      if (Math.abs(m - minor) <= 1) return 'kubectl';
    } catch {
      // fall through
    }
  }
  throw new Error(
    `no kubectl within one minor version of ${K8S_VERSION} (install Debian's or run scripts/ensure-k8s-binaries.sh with ZONEKEEPER_BUILD_KUBECTL=1)`,
  );
}

export async function startKube(options: { users?: KubeUser[]; crds?: boolean } = {}): Promise<KubeCluster> {
  const binDir = ensureK8sBinaries();
  const kubectlPath = pickKubectl(binDir);
  const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-kube-'));
  let output = '';
  const children: ChildProcess[] = [];
  const start = (name: string, bin: string, args: string[]) => {
    const child = spawn(path.join(binDir, bin), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const append = (d: Buffer) => {
      output += d
        .toString()
        .split('\n')
        .filter(Boolean)
        .map((l) => `[${name}] ${l}\n`)
        .join('');
      if (output.length > 2_000_000) output = output.slice(-1_000_000);
    };
    child.stdout!.on('data', append);
    child.stderr!.on('data', append);
    children.push(child);
    return child;
  };
  const stopAll = async () => {
    for (const child of children.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      });
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const pki = await createPki(dir);

    // Static tokens: the admin and the users the test asked for.
    const users = [ADMIN, ...(options.users ?? [])];
    const tokens = new Map(users.map((u) => [u.name, randomBytes(24).toString('hex')]));
    await writeFile(
      path.join(pki, 'tokens.csv'),
      users.map((u, i) => `${tokens.get(u.name)},${u.name},uid-${i},"${u.groups.join(',')}"`).join('\n') +
        '\n',
    );

    const { url: etcdUrl } = await startEtcd(dir, start, () => output);
    const apiPort = await freePort(false);

    const server = `https://127.0.0.1:${apiPort}`;
    const apiserver = start('kube-apiserver', 'kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${path.join(dir, 'apiserver-certs')}`,
      ...apiServerFlags(pki, apiPort),
      '--v=0',
    ]);
    const adminToken = tokens.get(ADMIN.name)!;
    const ca = path.join(pki, 'ca.crt');
    const kubeconfigs = new Map<string, string>();
    for (const u of users) {
      const file = path.join(dir, `kubeconfig-${kubeconfigs.size}`);
      await writeFile(file, kubeconfigYaml(server, ca, u.name, tokens.get(u.name)!));
      kubeconfigs.set(u.name, file);
    }
    const adminKubeconfig = kubeconfigs.get(ADMIN.name)!;
    // Ready when /readyz says so (RBAC bootstrap roles and CRD informers are up).
    await waitUntil(async () => {
      if (apiserver.exitCode !== null)
        throw new Error(`kube-apiserver exited (${apiserver.exitCode}):\n${output}`);
      return (await httpsStatus(`${server}/readyz`, adminToken, await readFile(ca))) === 200;
    }, 60_000);

    const cacheDir = path.join(dir, 'kubectl-cache');
    const kubectl = kubectlRunner(kubectlPath, adminKubeconfig, cacheDir);
    const cluster: KubeCluster = {
      server,
      dir,
      binDir,
      apiServerPid: apiserver.pid!,
      adminKubeconfig,
      kubectlPath,
      kubeconfigFor: kubeconfigLookup(kubeconfigs, 'startKube'),
      kubectl,
      kubectlOk: kubectlOkRunner(kubectl),
      logs: () => output,
      stop: stopAll,
    };
    if (options.crds !== false) await installCrds(cluster);
    return cluster;
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/** A throwaway CA, a serving certificate for 127.0.0.1 and service-account keys, in DIR/pki. */
async function createPki(dir: string): Promise<string> {
  // Certificates: a throwaway CA and a serving certificate for 127.0.0.1.
  const pki = path.join(dir, 'pki');
  await mkdir(pki);
  const openssl = (args: string[]) => execFileP('openssl', args, { cwd: pki });
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=zonekeeper-test-ca',
  ]);
  await openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'apiserver.key',
    '-out',
    'apiserver.csr',
    '-subj',
    '/CN=kube-apiserver',
  ]);
  await writeFile(
    path.join(pki, 'ext.cnf'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n',
  );
  await openssl([
    'x509',
    '-req',
    '-in',
    'apiserver.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'apiserver.crt',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  ]);
  const sa = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  await writeFile(path.join(pki, 'sa.pub'), sa.publicKey);
  await writeFile(path.join(pki, 'sa.key'), sa.privateKey);
  return pki;
}

/**
 * Applies deploy/crds/ as the chart does — without the CRDs of Datum Cloud's kinds, which share the
 * names of Zonekeeper's own and are installed only for that API (test/datum-kubernetes.test.ts) — and
 * waits until every CRD is Established.
 */
export async function installCrds(cluster: KubeCluster): Promise<void> {
  const dir = path.join(ROOT, 'deploy/crds');
  const files = (await readdir(dir)).filter(
    (f) => f.endsWith('.yaml') && !f.startsWith(`${DATUM_CRD_GROUP}_`),
  );
  await cluster.kubectlOk(['apply', '--server-side', ...files.flatMap((f) => ['-f', path.join(dir, f)])]);
  await cluster.kubectlOk([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/dnszoneclasses.dns.zonekeeper.dev',
    'crd/dnszones.dns.zonekeeper.dev',
    'crd/dnsrecordsets.dns.zonekeeper.dev',
  ]);
}

/** The HTTP status of a GET with a bearer token, or 0 when the server cannot be reached. */
function httpsStatus(url: string, token: string, ca: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * Starts etcd on two free ports and waits until it is healthy. A port found free can still be taken
 * before etcd binds it (another suite choosing the same number at the same moment): etcd then exits
 * with "address already in use", and it is started again on fresh ports, up to three times.
 */
async function startEtcd(
  dir: string,
  start: (name: string, bin: string, args: string[]) => ChildProcess,
  output: () => string,
): Promise<{ child: ChildProcess; url: string }> {
  for (let attempt = 1; ; attempt++) {
    const [port, peerPort] = [await freePort(false), await freePort(false)];
    const url = `http://127.0.0.1:${port}`;
    const child = start('etcd', 'etcd', [
      '--name=default',
      `--data-dir=${path.join(dir, `etcd-${attempt}`)}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync', // a test cluster: speed over durability, as envtest
      '--log-level=warn',
    ]);
    const before = output().length;
    try {
      await waitUntil(async () => {
        if (child.exitCode !== null) throw new Error(`etcd exited (${child.exitCode}):\n${output()}`);
        try {
          return (await fetch(`${url}/health`)).ok;
        } catch {
          return false;
        }
      }, 20_000);
      return { child, url };
    } catch (e) {
      if (attempt >= 3 || !output().slice(before).includes('address already in use')) throw e;
    }
  }
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One API server of a `startKubeClusters` plane: a KubeCluster that can be stopped and started again. */
export interface PlaneCluster extends KubeCluster {
  name: string;
  /** Stops this API server only (SIGTERM); its data stays in etcd under its prefix. */
  stopApiServer(): Promise<void>;
  /** Starts it again on the same port, with the same data; resolves once it is ready. */
  startApiServer(): Promise<void>;
}

export interface KubePlane {
  clusters: Record<string, PlaneCluster>;
  logs(): string;
  stop(): Promise<void>;
}

/**
 * Several API servers on one etcd, each with its own `--etcd-prefix` (`/<name>`): independent clusters
 * (objects, RBAC, CRDs) for the price of one etcd. They share the CA, the serving certificate and the
 * static tokens, so `users` exist in every one (with whatever RBAC each cluster binds).
 */
export async function startKubeClusters(
  names: string[],
  options: { users?: KubeUser[]; crds?: boolean } = {},
): Promise<KubePlane> {
  const binDir = ensureK8sBinaries();
  const kubectlPath = pickKubectl(binDir);
  const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-plane-'));
  let output = '';
  const children = new Set<ChildProcess>();
  const start = (name: string, bin: string, args: string[]) => {
    const child = spawn(path.join(binDir, bin), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const append = (d: Buffer) => {
      output += d
        .toString()
        .split('\n')
        .filter(Boolean)
        .map((l) => `[${name}] ${l}\n`)
        .join('');
      if (output.length > 2_000_000) output = output.slice(-1_000_000);
    };
    child.stdout!.on('data', append);
    child.stderr!.on('data', append);
    children.add(child);
    child.once('exit', () => children.delete(child));
    return child;
  };
  const kill = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 5000).unref();
    });
  let etcd: ChildProcess | undefined;
  const stopAll = async () => {
    for (const child of [...children]) if (child !== etcd) await kill(child);
    if (etcd) await kill(etcd);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const pki = await createPki(dir);
    const users = [ADMIN, ...(options.users ?? [])];
    const tokens = new Map(users.map((u) => [u.name, randomBytes(24).toString('hex')]));
    await writeFile(
      path.join(pki, 'tokens.csv'),
      users.map((u, i) => `${tokens.get(u.name)},${u.name},uid-${i},"${u.groups.join(',')}"`).join('\n') +
        '\n',
    );
    const ca = path.join(pki, 'ca.crt');
    const started = await startEtcd(dir, start, () => output);
    etcd = started.child;
    const etcdUrl = started.url;
    const adminToken = tokens.get(ADMIN.name)!;
    const clusters: Record<string, PlaneCluster> = {};
    await Promise.all(
      names.map(async (name) => {
        const apiPort = await freePort(false);
        const server = `https://127.0.0.1:${apiPort}`;
        const args = [
          `--etcd-servers=${etcdUrl}`,
          `--etcd-prefix=/${name}`,
          `--cert-dir=${path.join(dir, `certs-${name}`)}`,
          ...apiServerFlags(pki, apiPort),
          // Several API servers on one etcd each take their own lease for the kubernetes Service.
          '--endpoint-reconciler-type=none',
          '--v=0',
        ];
        let apiserver: ChildProcess | undefined;
        const launch = async () => {
          const child = start(name, 'kube-apiserver', args);
          apiserver = child;
          await waitUntil(async () => {
            if (child.exitCode !== null)
              throw new Error(`kube-apiserver ${name} exited (${child.exitCode}):\n${output}`);
            return (await httpsStatus(`${server}/readyz`, adminToken, await readFile(ca))) === 200;
          }, 90_000);
        };
        await launch();
        const kubeconfigs = new Map<string, string>();
        for (const u of users) {
          const file = path.join(dir, `kubeconfig-${name}-${kubeconfigs.size}`);
          await writeFile(file, kubeconfigYaml(server, ca, u.name, tokens.get(u.name)!));
          kubeconfigs.set(u.name, file);
        }
        const adminKubeconfig = kubeconfigs.get(ADMIN.name)!;
        const cacheDir = path.join(dir, `kubectl-cache-${name}`);
        const kubectl = kubectlRunner(kubectlPath, adminKubeconfig, cacheDir);
        const cluster: PlaneCluster = {
          name,
          server,
          dir,
          binDir,
          get apiServerPid() {
            return apiserver?.pid ?? 0;
          },
          adminKubeconfig,
          kubectlPath,
          kubeconfigFor: kubeconfigLookup(kubeconfigs, 'startKubeClusters'),
          kubectl,
          kubectlOk: kubectlOkRunner(kubectl),
          logs: () => output,
          stop: stopAll,
          stopApiServer: async () => {
            if (apiserver) await kill(apiserver);
            apiserver = undefined;
          },
          startApiServer: launch,
        };
        if (options.crds !== false) await installCrds(cluster);
        clusters[name] = cluster;
      }),
    );
    return { clusters, logs: () => output, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/** The kube-apiserver flags every API server here takes: loopback TLS, token users, RBAC. */
function apiServerFlags(pki: string, apiPort: number): string[] {
  return [
    `--tls-cert-file=${path.join(pki, 'apiserver.crt')}`,
    `--tls-private-key-file=${path.join(pki, 'apiserver.key')}`,
    `--secure-port=${apiPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${path.join(pki, 'sa.pub')}`,
    `--service-account-signing-key-file=${path.join(pki, 'sa.key')}`,
    `--token-auth-file=${path.join(pki, 'tokens.csv')}`,
    '--authorization-mode=RBAC',
    '--allow-privileged=true',
    // No controller manager mints service-account tokens here (envtest disables it too).
    '--disable-admission-plugins=ServiceAccount',
    '--enable-priority-and-fairness=false',
    '--profiling=false',
  ];
}

/** `kubeconfigFor` of a cluster: the kubeconfig written for a user passed to `starter`. */
function kubeconfigLookup(kubeconfigs: Map<string, string>, starter: string): KubeCluster['kubeconfigFor'] {
  return (user) => {
    const file = kubeconfigs.get(user.name);
    if (!file) throw new Error(`user ${user.name} was not passed to ${starter}`);
    return file;
  };
}

/** `kubectlOk` of a cluster: runs kubectl and throws with its output unless it exits 0. */
function kubectlOkRunner(kubectl: KubeCluster['kubectl']): KubeCluster['kubectlOk'] {
  return async (args, opts) => {
    const r = await kubectl(args, opts);
    if (r.code !== 0)
      throw new Error(`kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}${r.stdout}`);
    return r.stdout;
  };
}

/** kubectl against one API server: the admin kubeconfig unless another is given, its own cache dir. */
function kubectlRunner(
  kubectlPath: string,
  adminKubeconfig: string,
  cacheDir: string,
): KubeCluster['kubectl'] {
  return (args, opts = {}) =>
    new Promise((resolve) => {
      const child = execFile(
        kubectlPath,
        ['--kubeconfig', opts.kubeconfig ?? adminKubeconfig, '--cache-dir', cacheDir, ...args],
        { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 256 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          resolve({ stdout, stderr, code });
        },
      );
      if (opts.input !== undefined) child.stdin!.end(opts.input);
      else child.stdin!.end();
    });
}
