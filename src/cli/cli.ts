import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { writeCrdFiles } from '../api/crd-files.ts';
import { setGardenerTypes } from '../api/frontdoors/gardener/index.ts';
import { crdsYaml } from '../api/index.ts';
import { parseCidr, RRL_LIMITS, type RrlSettings } from '../server/rrl.ts';
import type { ExternalDnsWebhookSettings } from '../sources/externaldns-webhook/start.ts';
import { DEFAULT_EXTERNALDNS_WEBHOOK } from '../sources/externaldns-webhook/webhook.ts';
import { loadFrontDoors } from '../sources/front-door-modules.ts';
import type { HomelabApiSettings } from '../sources/homelab-api/callers.ts';
import { writeConfirmation } from '../sources/manifests/confirmations.ts';
import { loadWriteAccess } from '../sources/writes/write-access-file.ts';
import type { HttpConnectionLimits } from '../util/http-limits.ts';
import { within } from '../util/within.ts';
import { DOMAIN_FLAGS, type DomainSettings, domainSettings, gatewayDnsSettings } from './domain-flags.ts';
import { createLogger } from './logger.ts';
import { startServe } from './serve.ts';
import { runStatus } from './status.ts';
import { runValidate } from './validate.ts';
import { runZoneExport } from './zone-export.ts';
import { runZoneImport } from './zone-import.ts';

/** How long `serve` may take to stop on SIGTERM or SIGINT before it exits regardless. */
const SERVE_SHUTDOWN_TIMEOUT_MS = 20_000;

const USAGE = `zonekeeper — Kubernetes-native authoritative DNS

Usage:
  zonekeeper serve --manifests DIR [--dns 127.0.0.1:5353] [--http 127.0.0.1:8080] [--state-dir DIR]
                   [--workers N|auto] [--alias-resolver HOST:PORT] [--identity NAME] [--version-string TEXT]
                   [--response-cache N] [--tcp-per-source N] [--max-manifest-bytes SIZE]
                   [--secondary-probe-timeout SECONDS]
                   [--write-access FILE] [--health-probe-allow CIDR] [--health-probe-ca FILE] [--homelab-api HOST:PORT [--homelab-api-secret-file FILE
                   --homelab-api-namespace NS] [--homelab-api-max-nonces N]]
                   [--externaldns-webhook-namespace NS [--externaldns-webhook HOST:PORT]]
      Serve the zones described by the YAML in DIR with the built-in DNS server; follow edits live.
      --secondary-probe-timeout: a zone with no serial in --state-dir first asks its NOTIFY targets for
      their SOA serial and starts above it; how long to wait for them (default 2; 0 = do not ask).
      --max-manifest-bytes: larger manifest files are not read (default 16MiB; 512KiB, 64MiB, bytes).
      --workers: DNS threads sharing the port in this process (SO_REUSEPORT) and one copy of the zones
      (default 1: the main thread answers; N > 1: N threads answer, the main thread does not; auto =
      the number of CPUs).
      --health-probe-allow CIDR[,CIDR...] (repeatable): health probes of steered record sets may reach
      these networks although they are loopback (127.0.0.0/8, ::1), 0.0.0.0/8, link-local or cloud
      metadata addresses (refused otherwise; private networks are allowed).
      --health-probe-namespace-limit N: probe targets (address and check) the health-checked record sets
      of one namespace may hold (default 1024, of 65536 per process); a record set beyond it is served
      unprobed and reported (HealthCheckRefused).
      --health-probe-ca FILE (repeatable): PEM certificate authorities HTTPS health probes trust besides
      the system's.
      --change-safety-window SECONDS: how long content must stay unchanged to become the baseline that
      large changes are measured against (default 10; see docs/change-safety.md).
      --response-cache: answers kept for reuse per DNS process (default 100000; 0 = off).
      --tcp-per-source N: TCP connections one client (IPv4 address, IPv6 /64) may hold per DNS thread
      (default 64 of its 1000; 0 = no limit); more are closed at once.
      --rrl on|off, --rrl-rate N, --rrl-slip N, --rrl-table-size N, --rrl-exempt CIDR[,CIDR...]|none:
      response rate limiting on UDP (default on: 20 responses/s per client network and kind of answer,
      every 2nd over the rate sent truncated, 65536 buckets, loopback exempt); see docs/rrl.md.
      --write-access: YAML with the credentials that may write records through an API (name, kind,
      namespace, secretRef) and per-namespace quotas; see docs/api-writes.md.
      --homelab-api HOST:PORT: answer the homelab DNS webhook protocol (GET /health, POST /records,
      GET/DELETE /records/{type}/{domain}/{subdomain}, HMAC-signed); its callers are the webhook-hmac
      credentials of --write-access, or one caller: --homelab-api-secret-file FILE with
      --homelab-api-namespace NS. --homelab-api-max-nonces: nonces remembered per caller (default
      50000); see docs/homelab.md.
      --externaldns-webhook-namespace NS: be an ExternalDNS webhook provider (GET /, GET and POST
      /records, POST /adjustendpoints) writing the endpoints as record sets of NS, on
      --externaldns-webhook (default ${DEFAULT_EXTERNALDNS_WEBHOOK}; unauthenticated: keep it on loopback);
      see docs/externaldns.md.
      --http-max-connections N, --http-max-connections-per-client N, --http-headers-timeout SECONDS,
      and the same with --homelab-api- and --externaldns-webhook- in place of --http-: connections
      each HTTP listener holds at once, and per client address (more are closed as they arrive), and
      the time a connection has to send its headers (then 408 and closed). Defaults: --http 512, 64,
      5; --homelab-api 256, 32, 5; --externaldns-webhook 64, 64, 5.
  zonekeeper operator [--kubeconfig FILE] [--context NAME] [--namespace NS] [--http 0.0.0.0:8080]
                      [--leader-elect=false] [--leader-election-id NAME] [--identity NAME]
                      [--shutdown-timeout SECONDS] [--serial-block N] [--change-safety-window SECONDS]
                      [--dnssec-key-namespace NS]
                      [--write-access FILE] [--write-forwarders USER,...] [--write-audience NAME]
                      [--advertise-url URL] [--homelab-api HOST:PORT ...] [--domain-... (docs/domains.md)]
                      [--externaldns-webhook-namespace NS [--externaldns-webhook HOST:PORT]]
                      [--upstream-clusters FOLDER|secrets:SELECTOR [--upstream-removal-grace SECONDS] ...]
      Reconcile DNSZoneClasses, DNSZones and DNSRecordSets in a Kubernetes cluster: serials and hashes in
      DNSZone.status, conditions, finalizers, Events; one leader per --namespace Lease (15 s/10 s/2 s).
      --shutdown-timeout: on SIGTERM, stop within this many seconds (default 20), API server or not.
      --serial-block: serials reserved per write of a zone's serial record (a ConfigMap in --namespace)
      before a backend serves them (default 10; 1 = one write per change).
      --dnssec-key-namespace: where the leader keeps the DNSSEC key Secrets of signed builtin zones
      (default --namespace; best a namespace of their own, docs/dnssec.md).
      --write-access: as in serve; the leader writes labelled DNSRecordSets and takes writes forwarded
      by servers at POST /v1/writes on --http, from the Kubernetes users in --write-forwarders (their
      tokens checked by TokenReview for the audience --write-audience, default zonekeeper-writes);
      --advertise-url: how servers reach --http (default
      http://$POD_IP:PORT), published on the Lease. --http-max-connections and the other limits of
      the HTTP listeners as in serve. --homelab-api and its flags as in serve: the
      leader answers writes, a replica that does not lead answers 503. --externaldns-webhook and
      its namespace as in serve: every replica lists, the leader writes (elsewhere POST answers 503).
      --upstream-clusters: mirror DNSZones, DNSRecordSets, Domains (and DNSEndpoints, Datum's and
      Gardener's kinds) of other clusters into this one (a folder of kubeconfig files named after their clusters, or
      secrets:SELECTOR for Secrets in --namespace with a kubeconfig key), status written back upstream;
      --upstream-poll-interval (default 10),
      --upstream-removal-grace (default 600), --upstream-resync-interval (default 300),
      --upstream-retry-max (default 30) in seconds, --upstream-max-objects per cluster and kind
      (default 20000), --upstream-max-bytes per cluster (default 134217728: 128 MiB) and
      --upstream-max-response-bytes per response or watch event (default 16777216); see docs/multicluster.md.
      Domains (docs/domains.md): --domain-resolver HOST:PORT (default: /etc/resolv.conf's first),
      --domain-lookup-timeout 2s, --domain-delegation-port 53, --domain-http-port 80,
      --domain-http-timeout 5s, --domain-http-deadline 10s, --domain-http-allow CIDR,... (private,
      loopback, link-local and metadata addresses are refused otherwise), --domain-retry-schedule "5s/5m,1m/15m,5m±25%",
      --domain-reconfirm-interval 1h. --domain-registration=true: registration data (RDAP through
      --domain-rdap-bootstrap URL, default IANA's; WHOIS through --domain-whois-server HOST:PORT,
      default whois.iana.org:43) every --domain-registration-refresh 24h, --domain-expiry-warning 720h.
      --gateway-dns=true [--gateway-target-domain gw.example.net]:
      Gateway API hostnames under verified Domains become DNSRecordSets (docs/domains.md).
      --health-probe-allow, --health-probe-namespace-limit, --health-probe-ca as in serve: the leader
      probes steered record sets of builtin classes for DNSRecordSet.status.targets and
      TargetDown/TargetUp Events.
  zonekeeper server [--kubeconfig FILE] [--context NAME] [--dns 0.0.0.0:5353] [--http 0.0.0.0:8080]
                    [--workers N|auto] [--alias-resolver HOST:PORT] [--identity NAME] [--version-string TEXT]
                    [--unconfirmed-after SECONDS] [--response-cache N] [--tcp-per-source N] [--rrl ...]
                    [--operator-namespace NS] [--dnssec-key-namespace NS] [--leader-election-id NAME]
                    [--write-timeout SECONDS]
                    [--write-token-file FILE] [--homelab-api HOST:PORT ...] [--write-access FILE]
                    [--externaldns-webhook-namespace NS [--externaldns-webhook HOST:PORT]]
                    [--health-probe-allow CIDR] [--health-probe-namespace-limit N] [--health-probe-ca FILE]
      Serve the cluster's zones read-only, at the serials the operator recorded; any number of replicas.
      Signed zones are signed here with the keys read from --dnssec-key-namespace (default
      --operator-namespace), at the signing time the operator recorded with the serial.
      Records written through an API here are forwarded to the operator leader named by the Lease
      --leader-election-id in --operator-namespace (default: this pod's namespace), each attempt
      bounded by --write-timeout (default 10). --write-token-file: the token shown to the leader, a
      projected service-account token with the leader's --write-audience, re-read before each use
      (without it writes here answer UNAVAILABLE).
      --response-cache, --tcp-per-source, the --rrl flags and the HTTP listeners' limits as in serve.
      --homelab-api and its flags as in serve; the callers' writes are forwarded to the leader, which
      must know the same credentials (--write-access here names the callers and their secrets;
      namespaces and quotas are the leader's).
      --externaldns-webhook and its namespace as in serve: plans are forwarded to the leader, which
      must run with the same --externaldns-webhook-namespace.
  zonekeeper validate [--state-dir DIR] [--max-manifest-bytes SIZE] PATH...
      Check manifests (files or folders); print one line per problem; exit 1 if any is invalid.
      --state-dir: the state folder of the serve reading PATH: judge as it would (immutable fields,
      last valid versions it keeps).
  zonekeeper plan --manifests DIR [--state-dir DIR | --kubeconfig FILE [--context NAME]] [--output text|json]
                  [--max-manifest-bytes SIZE] [--live [--operator-namespace NS]]
      Show what applying DIR would change, zone by zone: RRsets added, changed and deleted, the serial
      before -> after, and every problem that would keep a resource from being accepted. Against what the
      --state-dir of a serve remembers (none: everything is new), or with --kubeconfig against the
      cluster's objects (DIR overlaid on them). --live: also read each zone from its class's external
      backend (PowerDNS, RFC 2136 primary, homelab webhook; secrets by reference: files and environment
      variables, Secrets with --kubeconfig, those without a namespace in --operator-namespace, default
      zonekeeper-system) and show what an apply would add, change and delete there and what it leaves
      alone. Changes nothing. Exit 0: no changes; 2: changes; 1: an error, a resource that would be
      refused, or a backend that could not be read (docs/change-safety.md).
  zonekeeper confirm --state-dir DIR ZONE HASH
      Release the held change HASH of ZONE (NAME or NAMESPACE/NAME) in the \`serve\` using DIR: exactly
      that change is applied; another change needs its own confirmation (docs/change-safety.md).
  zonekeeper status [--http URL]
      Show zones and record sets of a running \`zonekeeper serve\` (default http://127.0.0.1:8080).
  zonekeeper crds [--out DIR]
      Print the CustomResourceDefinitions, or write one file per kind into DIR.

  serve, operator, server, validate, plan and crds take --front-door MODULE (repeatable): read the kinds of
  another API through a front door defined in MODULE, beside the registered ones (docs/architecture.md),
  and --gardener-types A,B: the spec.type values of Gardener DNSRecords to reconcile (default zonekeeper;
  others are left alone; docs/compat/gardener.md).
  zonekeeper zone export --manifests DIR --zone NAME [--state-dir DIR] [--secondary-probe-timeout SECONDS]
      Print one zone as an RFC 1035 zone file, exactly as \`serve\` serves it (serial from --state-dir;
      with none stored, above what the zone's secondaries answer, as serve starts).
  zonekeeper zone import FILE --zone NAME --namespace NS [--class NAME] [--name RESOURCE]
                         [--prefix TEXT] [--manifests DIR] [--strict]
  zonekeeper zone import (--axfr HOST:PORT [--tsig-key NAME:ALG:SECRET_FILE] |
                          --powerdns URL --api-key-file FILE [--server-id ID]) --zone NAME --namespace NS ...
                         [--timeout SECONDS] [--max-records N]
      Print a zone file, or a live zone (AXFR from a primary, or PowerDNS's HTTP API), as DNSZone +
      DNSRecordSet YAML; problems go to stderr (exit 1 on errors; --strict: also when a record is
      skipped). --manifests DIR: existing manifests; the class there is compared with the SOA MNAME/apex
      NS, and DNSZones there that are child zones replace delegations. Live reads: --timeout for the
      whole read (default 30), more than --max-records records refused (default 1000000).
`;

/**
 * `--front-door MODULE` (repeatable): a front door loaded from a module, beside the registered ones
 * (serve, operator, server, validate and crds must be given the same ones).
 */
const FRONT_DOOR_FLAG = {
  'front-door': { type: 'string', multiple: true },
  'gardener-types': { type: 'string' },
} as const;

/**
 * `--gardener-types A,B`: the provider types (`spec.type`) of Gardener DNSRecords Zonekeeper
 * reconciles (default `zonekeeper`); others are left alone. Read before the command's own flags,
 * since every command that reads front doors takes it.
 */
function applyGardenerTypes(args: readonly string[]): void {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const value =
      arg === '--gardener-types'
        ? args[i + 1]
        : arg.startsWith('--gardener-types=')
          ? arg.slice(17)
          : undefined;
    if (value === undefined) continue;
    try {
      setGardenerTypes(value.split(','));
    } catch (e) {
      throw new UsageError(e instanceof Error ? e.message : String(e));
    }
  }
}

/**
 * `--health-probe-allow CIDR`, `--health-probe-namespace-limit N` and `--health-probe-ca FILE` (serve,
 * server, operator): what steering's probes may reach, how many one namespace may hold, what they trust.
 */
const HEALTH_PROBE_FLAGS = {
  'health-probe-allow': { type: 'string', multiple: true },
  'health-probe-namespace-limit': { type: 'string' },
  'health-probe-ca': { type: 'string', multiple: true },
} as const;

async function healthProbeOptions(values: {
  'health-probe-allow'?: string[];
  'health-probe-namespace-limit'?: string;
  'health-probe-ca'?: string[];
}): Promise<{ healthProbeAllow?: string[]; healthProbeNamespaceLimit?: number; healthProbeCa?: string[] }> {
  const limit = values['health-probe-namespace-limit'];
  if (limit !== undefined && !/^\d{1,9}$/.test(limit))
    throw new UsageError(
      `--health-probe-namespace-limit: ${JSON.stringify(limit)} is not a whole number of probe targets`,
    );
  return {
    ...(limit !== undefined ? { healthProbeNamespaceLimit: Number(limit) } : {}),
    ...(values['health-probe-allow']
      ? {
          healthProbeAllow: values['health-probe-allow'].flatMap((v) =>
            v
              .split(',')
              .map((n) => n.trim())
              .filter((n) => n !== ''),
          ),
        }
      : {}),
    ...(values['health-probe-ca']
      ? { healthProbeCa: await Promise.all(values['health-probe-ca'].map((f) => readFile(f, 'utf8'))) }
      : {}),
  };
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  applyGardenerTypes(rest);
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({
        args: rest,
        options: {
          manifests: { type: 'string' },
          dns: { type: 'string', default: '127.0.0.1:5353' },
          http: { type: 'string', default: '127.0.0.1:8080' },
          'state-dir': { type: 'string' },
          'alias-resolver': { type: 'string' },
          identity: { type: 'string' },
          'version-string': { type: 'string' },
          workers: { type: 'string', default: '1' },
          'response-cache': { type: 'string' },
          'tcp-per-source': { type: 'string' },
          ...RRL_FLAGS,
          'max-manifest-bytes': { type: 'string' },
          'secondary-probe-timeout': { type: 'string' },
          'change-safety-window': { type: 'string' },
          ...FRONT_DOOR_FLAG,
          'write-access': { type: 'string' },
          ...HOMELAB_API_FLAGS,
          ...HTTP_LIMIT_FLAGS,
          ...EXTERNALDNS_WEBHOOK_FLAGS,
          ...HEALTH_PROBE_FLAGS,
        },
      });
      if (!values.manifests) throw new UsageError('serve needs --manifests DIR');
      const externalDnsWebhook = externalDnsWebhookOption(values);
      const windowMs = changeSafetyWindowOption(values['change-safety-window']);
      const homelabApi = homelabApiOption(values);
      const frontDoorModules = values['front-door'] ?? [];
      const probeSeconds = probeTimeoutOption(values['secondary-probe-timeout']);
      const log = createLogger();
      const handle = await startServe({
        manifests: values.manifests,
        dns: values.dns,
        http: values.http,
        ...httpLimitsField(values),
        ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
        ...(values['alias-resolver'] ? { aliasResolver: values['alias-resolver'] } : {}),
        ...(values.identity ? { identity: values.identity } : {}),
        ...(values['version-string'] ? { version: values['version-string'] } : {}),
        workers: parseWorkers(values.workers),
        ...(await healthProbeOptions(values)),
        ...responseCacheOption(values['response-cache']),
        ...tcpPerSourceOption(values['tcp-per-source']),
        ...rrlOption(values),
        ...maxManifestBytesOption(values['max-manifest-bytes']),
        ...(probeSeconds !== undefined ? { secondaryProbeTimeoutMs: probeSeconds * 1000 } : {}),
        ...(windowMs !== undefined ? { changeSafetyWindowMs: windowMs } : {}),
        frontDoors: await loadFrontDoors(frontDoorModules),
        frontDoorModules,
        ...(values['write-access'] ? { writeAccess: await loadWriteAccess(values['write-access']) } : {}),
        ...(homelabApi ? { homelabApi } : {}),
        ...(externalDnsWebhook ? { externalDnsWebhook } : {}),
        log,
      });
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          log('info', `received ${signal}, shutting down`);
          resolve();
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
      // Bounded: what does not finish in time (a write that never settles) does not keep the process.
      if (!(await within(handle.stop(), SERVE_SHUTDOWN_TIMEOUT_MS))) {
        log('warn', `shutdown did not finish within ${SERVE_SHUTDOWN_TIMEOUT_MS / 1000} s; exiting now`);
        process.exit(1);
      }
      return 0;
    }
    case 'operator': {
      // Loaded here, not at the top: the Kubernetes client is for the cluster commands only, so
      // `serve` and the other folder-mode commands do not carry its modules (ADR 0020).
      const { DEFAULT_SHUTDOWN_TIMEOUT_MS, podNamespace, startOperator } = await import('./operator.ts');
      const { DEFAULT_SERIAL_BLOCK, MAX_SERIAL_BLOCK } = await import(
        '../sources/kubernetes/serial-records.ts'
      );
      const { values } = parseArgs({
        args: rest,
        options: {
          kubeconfig: { type: 'string' },
          context: { type: 'string' },
          namespace: { type: 'string' },
          http: { type: 'string', default: '0.0.0.0:8080' },
          'leader-elect': { type: 'string', default: 'true' },
          'leader-election-id': { type: 'string', default: 'zonekeeper-operator' },
          identity: { type: 'string' },
          'shutdown-timeout': { type: 'string', default: String(DEFAULT_SHUTDOWN_TIMEOUT_MS / 1000) },
          'serial-block': { type: 'string', default: String(DEFAULT_SERIAL_BLOCK) },
          'change-safety-window': { type: 'string' },
          'dnssec-key-namespace': { type: 'string' },
          ...FRONT_DOOR_FLAG,
          'write-access': { type: 'string' },
          'write-forwarders': { type: 'string' },
          'write-audience': { type: 'string' },
          'advertise-url': { type: 'string' },
          ...HOMELAB_API_FLAGS,
          ...HTTP_LIMIT_FLAGS,
          ...EXTERNALDNS_WEBHOOK_FLAGS,
          ...UPSTREAM_FLAGS,
          ...DOMAIN_FLAGS,
          ...HEALTH_PROBE_FLAGS,
        },
      });
      const homelabApi = homelabApiOption(values);
      const externalDnsWebhook = externalDnsWebhookOption(values);
      const upstreamClusters = upstreamClustersOption(values);
      let domains: DomainSettings;
      let gatewayDns: ReturnType<typeof gatewayDnsSettings>;
      try {
        domains = domainSettings(values);
        gatewayDns = gatewayDnsSettings(values);
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      if (values['advertise-url'] !== undefined && !/^https?:\/\/[^\s/]+$/.test(values['advertise-url']))
        throw new UsageError('--advertise-url: give http://HOST:PORT (how server pods reach this HTTP port)');
      const shutdownTimeout = Number(values['shutdown-timeout']);
      if (!Number.isFinite(shutdownTimeout) || shutdownTimeout < 0 || shutdownTimeout > 3600)
        throw new UsageError('--shutdown-timeout: give seconds, from 0 to 3600');
      const serialBlock = Number(values['serial-block']);
      if (!Number.isInteger(serialBlock) || serialBlock < 1 || serialBlock > MAX_SERIAL_BLOCK)
        throw new UsageError(`--serial-block: give a whole number from 1 to ${MAX_SERIAL_BLOCK}`);
      const namespace = values.namespace ?? podNamespace() ?? 'zonekeeper-system';
      const log = createLogger();
      const handle = await startOperator({
        ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
        ...(values.context ? { context: values.context } : {}),
        namespace,
        ...(values['dnssec-key-namespace'] ? { dnssecKeyNamespace: values['dnssec-key-namespace'] } : {}),
        http: values.http,
        ...httpLimitsField(values),
        leaderElect: parseBoolean('--leader-elect', values['leader-elect']),
        leaseName: values['leader-election-id'],
        ...(values.identity ? { identity: values.identity } : {}),
        shutdownTimeoutMs: shutdownTimeout * 1000,
        serialBlock,
        ...changeSafetyWindowField(values['change-safety-window']),
        frontDoors: await loadFrontDoors(values['front-door'] ?? []),
        ...(values['write-access'] ? { writeAccess: await loadWriteAccess(values['write-access']) } : {}),
        ...(values['write-forwarders']
          ? {
              writeForwarders: values['write-forwarders']
                .split(',')
                .map((u) => u.trim())
                .filter(Boolean),
            }
          : {}),
        ...(values['write-audience'] ? { writeAudience: values['write-audience'] } : {}),
        ...(values['advertise-url'] ? { advertiseUrl: values['advertise-url'] } : {}),
        ...(homelabApi ? { homelabApi } : {}),
        ...(externalDnsWebhook ? { externalDnsWebhook } : {}),
        ...(upstreamClusters ? { upstreamClusters } : {}),
        domains,
        ...(gatewayDns ? { gatewayDns } : {}),
        ...(await healthProbeOptions(values)),
        log,
      });
      await untilSignal(log);
      const { unfinished } = await handle.stop();
      // Requests to an API server that does not answer would keep the process alive: end it here.
      if (unfinished.length > 0) process.exit(1);
      return 0;
    }
    case 'server': {
      const { startServer } = await import('./server.ts');
      const { podNamespace } = await import('./operator.ts');
      const { values } = parseArgs({
        args: rest,
        options: {
          kubeconfig: { type: 'string' },
          context: { type: 'string' },
          dns: { type: 'string', default: '0.0.0.0:5353' },
          http: { type: 'string', default: '0.0.0.0:8080' },
          workers: { type: 'string', default: '1' },
          'alias-resolver': { type: 'string' },
          identity: { type: 'string' },
          'version-string': { type: 'string' },
          'unconfirmed-after': { type: 'string', default: '30' },
          'response-cache': { type: 'string' },
          'tcp-per-source': { type: 'string' },
          ...RRL_FLAGS,
          ...FRONT_DOOR_FLAG,
          'operator-namespace': { type: 'string' },
          'dnssec-key-namespace': { type: 'string' },
          'leader-election-id': { type: 'string', default: 'zonekeeper-operator' },
          'write-timeout': { type: 'string', default: '10' },
          'write-token-file': { type: 'string' },
          'write-access': { type: 'string' },
          ...HOMELAB_API_FLAGS,
          ...HTTP_LIMIT_FLAGS,
          ...EXTERNALDNS_WEBHOOK_FLAGS,
          ...HEALTH_PROBE_FLAGS,
        },
      });
      const homelabApi = homelabApiOption(values);
      const externalDnsWebhook = externalDnsWebhookOption(values);
      if (values['write-access'] !== undefined && !homelabApi)
        throw new UsageError(
          'server --write-access names the callers of --homelab-api (their secrets); give --homelab-api too',
        );
      const writeTimeout = Number(values['write-timeout']);
      if (!Number.isFinite(writeTimeout) || writeTimeout <= 0 || writeTimeout > 300)
        throw new UsageError('--write-timeout: give seconds, more than 0 and at most 300');
      const unconfirmed = Number(values['unconfirmed-after']);
      if (!Number.isFinite(unconfirmed) || unconfirmed < 0)
        throw new UsageError('--unconfirmed-after: give seconds (0 or more)');
      const log = createLogger();
      const handle = await startServer({
        ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
        ...(values.context ? { context: values.context } : {}),
        dns: values.dns,
        http: values.http,
        ...httpLimitsField(values),
        workers: parseWorkers(values.workers),
        ...(await healthProbeOptions(values)),
        ...(values['alias-resolver'] ? { aliasResolver: values['alias-resolver'] } : {}),
        ...(values.identity ? { identity: values.identity } : {}),
        ...(values['version-string'] ? { version: values['version-string'] } : {}),
        unconfirmedAfterMs: unconfirmed * 1000,
        ...responseCacheOption(values['response-cache']),
        ...tcpPerSourceOption(values['tcp-per-source']),
        ...rrlOption(values),
        frontDoors: await loadFrontDoors(values['front-door'] ?? []),
        operatorNamespace: values['operator-namespace'] ?? podNamespace() ?? 'zonekeeper-system',
        ...(values['dnssec-key-namespace'] ? { dnssecKeyNamespace: values['dnssec-key-namespace'] } : {}),
        leaseName: values['leader-election-id'],
        writeTimeoutMs: writeTimeout * 1000,
        ...(values['write-token-file'] ? { writeTokenFile: values['write-token-file'] } : {}),
        ...(values['write-access'] ? { writeAccess: await loadWriteAccess(values['write-access']) } : {}),
        ...(homelabApi ? { homelabApi } : {}),
        ...(externalDnsWebhook ? { externalDnsWebhook } : {}),
        log,
      });
      await untilSignal(log);
      await handle.stop();
      return 0;
    }
    case 'validate': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: {
          'state-dir': { type: 'string' },
          'max-manifest-bytes': { type: 'string' },
          ...FRONT_DOOR_FLAG,
        },
      });
      if (positionals.length === 0) throw new UsageError('validate needs at least one PATH');
      if (values['state-dir'] !== undefined && positionals.length !== 1)
        throw new UsageError(
          'validate --state-dir needs exactly one PATH: the folder serve --manifests reads',
        );
      return runValidate(positionals, process.stdout, {
        ...(values['state-dir'] !== undefined ? { stateDir: values['state-dir'] } : {}),
        ...maxManifestBytesOption(values['max-manifest-bytes']),
        frontDoors: await loadFrontDoors(values['front-door'] ?? []),
      });
    }
    case 'plan':
      return runPlanCommand(rest).catch((e: unknown) => {
        if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
          process.stderr.write(`zonekeeper: ${(e as Error).message}\n\n${USAGE}`);
          return 1;
        }
        throw e;
      });
    case 'status': {
      const { values } = parseArgs({
        args: rest,
        options: { http: { type: 'string', default: 'http://127.0.0.1:8080' } },
      });
      const url = /^https?:\/\//.test(values.http) ? values.http : `http://${values.http}`;
      return runStatus(url, process.stdout);
    }
    case 'crds': {
      const { values } = parseArgs({ args: rest, options: { out: { type: 'string' }, ...FRONT_DOOR_FLAG } });
      const doors = (await loadFrontDoors(values['front-door'] ?? [])).all;
      if (values.out) {
        for (const file of writeCrdFiles(values.out, doors)) process.stdout.write(`wrote ${file}\n`);
      } else {
        process.stdout.write(crdsYaml(doors));
      }
      return 0;
    }
    case 'confirm': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { 'state-dir': { type: 'string' } },
      });
      if (!values['state-dir'] || positionals.length !== 2)
        throw new UsageError('confirm needs --state-dir DIR ZONE HASH');
      const [zone, hash] = positionals as [string, string];
      let file: string;
      try {
        file = await writeConfirmation(values['state-dir'], zone, hash);
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      process.stdout.write(
        `confirmed change ${hash} of ${zone} (${file}); a running serve applies it if it is the change held now\n`,
      );
      return 0;
    }
    case 'zone':
      return runZone(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

async function runZone(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'export': {
      const { values } = parseArgs({
        args: rest,
        options: {
          manifests: { type: 'string' },
          zone: { type: 'string' },
          'state-dir': { type: 'string' },
          'secondary-probe-timeout': { type: 'string' },
        },
      });
      if (!values.manifests || !values.zone)
        throw new UsageError('zone export needs --manifests DIR and --zone NAME');
      const probeSeconds = probeTimeoutOption(values['secondary-probe-timeout']);
      return runZoneExport(
        {
          manifests: values.manifests,
          zone: values.zone,
          ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
          ...(probeSeconds !== undefined ? { secondaryProbeTimeoutMs: probeSeconds * 1000 } : {}),
        },
        process.stdout,
        process.stderr,
      );
    }
    case 'import': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: {
          zone: { type: 'string' },
          namespace: { type: 'string' },
          class: { type: 'string', default: 'builtin' },
          name: { type: 'string' },
          prefix: { type: 'string' },
          manifests: { type: 'string' },
          strict: { type: 'boolean', default: false },
          axfr: { type: 'string' },
          'tsig-key': { type: 'string' },
          powerdns: { type: 'string' },
          'api-key-file': { type: 'string' },
          'server-id': { type: 'string' },
          timeout: { type: 'string' },
          'max-records': { type: 'string' },
        },
      });
      const [file, ...extra] = positionals;
      const sources = [file !== undefined, values.axfr !== undefined, values.powerdns !== undefined].filter(
        Boolean,
      );
      if (sources.length !== 1 || extra.length > 0)
        throw new UsageError('zone import reads exactly one of: a FILE, --axfr HOST:PORT, --powerdns URL');
      if (!values.zone || !values.namespace) {
        throw new UsageError('zone import needs --zone NAME and --namespace NS');
      }
      if (values['tsig-key'] !== undefined && values.axfr === undefined)
        throw new UsageError('--tsig-key goes with --axfr');
      if (values.powerdns !== undefined && values['api-key-file'] === undefined)
        throw new UsageError('--powerdns needs --api-key-file FILE (the X-API-Key of its webserver)');
      if (
        (values['api-key-file'] !== undefined || values['server-id'] !== undefined) &&
        values.powerdns === undefined
      )
        throw new UsageError('--api-key-file and --server-id go with --powerdns');
      if ((values.timeout !== undefined || values['max-records'] !== undefined) && file !== undefined)
        throw new UsageError('--timeout and --max-records are for --axfr and --powerdns');
      let timeoutMs: number | undefined;
      if (values.timeout !== undefined) {
        const seconds = Number(values.timeout);
        if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 3600)
          throw new UsageError('--timeout: give seconds, above 0 and at most 3600');
        timeoutMs = seconds * 1000;
      }
      let maxRecords: number | undefined;
      if (values['max-records'] !== undefined) {
        maxRecords = Number(values['max-records']);
        if (!/^\d+$/.test(values['max-records']) || maxRecords < 1 || maxRecords > 100_000_000)
          throw new UsageError('--max-records: give a whole number from 1 to 100000000');
      }
      return runZoneImport(
        {
          source:
            file !== undefined
              ? { file }
              : values.axfr !== undefined
                ? {
                    axfr: values.axfr,
                    ...(values['tsig-key'] !== undefined ? { tsigKey: values['tsig-key'] } : {}),
                  }
                : {
                    powerdns: values.powerdns!,
                    apiKeyFile: values['api-key-file']!,
                    ...(values['server-id'] !== undefined ? { serverId: values['server-id'] } : {}),
                  },
          zone: values.zone,
          namespace: values.namespace,
          className: values.class,
          strict: values.strict,
          ...(values.name !== undefined ? { name: values.name } : {}),
          ...(values.prefix !== undefined ? { prefix: values.prefix } : {}),
          ...(values.manifests !== undefined ? { manifests: values.manifests } : {}),
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          ...(maxRecords !== undefined ? { maxRecords } : {}),
        },
        process.stdout,
        process.stderr,
      );
    }
    default:
      throw new UsageError(
        sub === undefined
          ? 'zone needs a subcommand: export or import'
          : `unknown zone subcommand ${JSON.stringify(sub)}`,
      );
  }
}

/** `zonekeeper plan` (exit 2 means "changes" there: its usage errors exit 1). */
async function runPlanCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      manifests: { type: 'string' },
      'state-dir': { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      output: { type: 'string', default: 'text' },
      'max-manifest-bytes': { type: 'string' },
      live: { type: 'boolean', default: false },
      'operator-namespace': { type: 'string' },
      ...FRONT_DOOR_FLAG,
    },
  });
  if (positionals.length > 0)
    throw new UsageError(`plan takes no PATH (${positionals[0]}): give --manifests DIR`);
  if (!values.manifests) throw new UsageError('plan needs --manifests DIR');
  if (values.output !== 'text' && values.output !== 'json')
    throw new UsageError(`--output ${JSON.stringify(values.output)}: give text or json`);
  if (values['state-dir'] !== undefined && values.kubeconfig !== undefined)
    throw new UsageError('plan takes --state-dir (folder mode) or --kubeconfig (cluster mode), not both');
  if (values.context !== undefined && values.kubeconfig === undefined)
    throw new UsageError('plan --context goes with --kubeconfig');
  if (values['operator-namespace'] !== undefined && (values.kubeconfig === undefined || !values.live))
    throw new UsageError('plan --operator-namespace goes with --kubeconfig and --live');
  const { runPlan } = await import('./plan.ts');
  return runPlan(
    {
      manifests: values.manifests,
      output: values.output,
      ...(values.live ? { live: true } : {}),
      ...(values['operator-namespace'] !== undefined
        ? { operatorNamespace: values['operator-namespace'] }
        : {}),
      ...(values['state-dir'] !== undefined ? { stateDir: values['state-dir'] } : {}),
      ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
      ...(values.context !== undefined ? { context: values.context } : {}),
      ...maxManifestBytesOption(values['max-manifest-bytes']),
      frontDoors: await loadFrontDoors(values['front-door'] ?? []),
    },
    process.stdout,
    process.stderr,
  );
}

class UsageError extends Error {}

/** Resolves on SIGINT or SIGTERM (graceful shutdown of `operator` and `server`). */
function untilSignal(log: ReturnType<typeof createLogger>): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      log('info', `received ${signal}, shutting down`);
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}

function parseBoolean(flag: string, text: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new UsageError(`${flag} ${JSON.stringify(text)}: give true or false`);
}

function parseWorkers(text: string): number {
  if (text === 'auto') return availableParallelism();
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 256)
    throw new UsageError(`--workers ${JSON.stringify(text)}: give a whole number from 1 to 256, or auto`);
  return n;
}

/** `--secondary-probe-timeout SECONDS` of serve and zone export. */
function probeTimeoutOption(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > 60)
    throw new UsageError('--secondary-probe-timeout: give seconds, from 0 (do not ask) to 60');
  return seconds;
}

/** `--response-cache N`: answers kept per DNS process; 0 turns the cache off. */
function responseCacheOption(text: string | undefined): { responseCache?: number } {
  if (text === undefined) return {};
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 10_000_000)
    throw new UsageError(
      `--response-cache ${JSON.stringify(text)}: give a whole number of answers from 0 (off) to 10000000`,
    );
  return { responseCache: n };
}

/** `--tcp-per-source N`: TCP connections one client network may hold per DNS thread; 0: no limit. */
function tcpPerSourceOption(text: string | undefined): { maxTcpPerSource?: number } {
  if (text === undefined) return {};
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 1000)
    throw new UsageError(
      `--tcp-per-source ${JSON.stringify(text)}: give a whole number of connections from 0 (no limit) to 1000`,
    );
  return { maxTcpPerSource: n };
}

/** `--max-manifest-bytes SIZE`: bytes, or with a unit (KiB, MiB, GiB; K, M, G are the same). */
function maxManifestBytesOption(text: string | undefined): { maxManifestBytes?: number } {
  if (text === undefined) return {};
  const m = /^(\d+)\s*(|K|KiB|M|MiB|G|GiB)$/i.exec(text.trim());
  const unit = m
    ? (
        { '': 1, k: 2 ** 10, kib: 2 ** 10, m: 2 ** 20, mib: 2 ** 20, g: 2 ** 30, gib: 2 ** 30 } as Record<
          string,
          number
        >
      )[m[2]!.toLowerCase()]
    : undefined;
  const bytes = m && unit ? Number(m[1]) * unit : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1)
    throw new UsageError(
      `--max-manifest-bytes ${JSON.stringify(text)}: give a size such as 16MiB, 512KiB or a number of bytes`,
    );
  return { maxManifestBytes: bytes };
}

/** `operator --upstream-clusters` and its settings (docs/multicluster.md). */
const UPSTREAM_FLAGS = {
  'upstream-clusters': { type: 'string' },
  'upstream-poll-interval': { type: 'string' },
  'upstream-removal-grace': { type: 'string' },
  'upstream-resync-interval': { type: 'string' },
  'upstream-retry-max': { type: 'string' },
  'upstream-max-objects': { type: 'string' },
  'upstream-max-bytes': { type: 'string' },
  'upstream-max-response-bytes': { type: 'string' },
} as const;

function upstreamClustersOption(values: Record<string, string | boolean | string[] | undefined>) {
  const source = values['upstream-clusters'];
  const seconds = (flag: string, min: number, max: number): number | undefined => {
    const v = values[flag];
    if (v === undefined) return undefined;
    if (typeof source !== 'string') throw new UsageError(`--${flag} goes with --upstream-clusters`);
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max)
      throw new UsageError(`--${flag}: give seconds, from ${min} to ${max}`);
    return n * 1000;
  };
  const poll = seconds('upstream-poll-interval', 0.1, 3600);
  const grace = seconds('upstream-removal-grace', 0, 30 * 86400);
  const resync = seconds('upstream-resync-interval', 1, 86400);
  const retry = seconds('upstream-retry-max', 0.1, 3600);
  const maxObjects = values['upstream-max-objects'];
  const whole = (flag: string): number | undefined => {
    const v = values[flag];
    if (v === undefined) return undefined;
    if (typeof source !== 'string') throw new UsageError(`--${flag} goes with --upstream-clusters`);
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1024)
      throw new UsageError(`--${flag}: give a whole number of bytes, 1024 or more`);
    return n;
  };
  const maxBytes = whole('upstream-max-bytes');
  const maxResponseBytes = whole('upstream-max-response-bytes');
  if (typeof source !== 'string') {
    if (maxObjects !== undefined)
      throw new UsageError('--upstream-max-objects goes with --upstream-clusters');
    return undefined;
  }
  if (source === '')
    throw new UsageError('--upstream-clusters: give a folder of kubeconfigs or secrets:<label-selector>');
  let max: number | undefined;
  if (maxObjects !== undefined) {
    max = Number(maxObjects);
    if (!Number.isInteger(max) || max < 1)
      throw new UsageError('--upstream-max-objects: give a whole number, 1 or more');
  }
  return {
    source,
    ...(poll !== undefined ? { pollIntervalMs: poll } : {}),
    ...(grace !== undefined ? { removalGraceMs: grace } : {}),
    ...(resync !== undefined ? { resyncIntervalMs: resync } : {}),
    ...(retry !== undefined ? { retryMaxMs: retry } : {}),
    ...(max !== undefined ? { maxObjectsPerCluster: max } : {}),
    ...(maxBytes !== undefined ? { maxBytesPerCluster: maxBytes } : {}),
    ...(maxResponseBytes !== undefined ? { maxResponseBytes } : {}),
  };
}

/** The homelab DNS API's flags (serve, operator, server). */
const HOMELAB_API_FLAGS = {
  'homelab-api': { type: 'string' },
  'homelab-api-secret-file': { type: 'string' },
  'homelab-api-namespace': { type: 'string' },
  'homelab-api-max-nonces': { type: 'string' },
  'homelab-api-max-connections': { type: 'string' },
  'homelab-api-max-connections-per-client': { type: 'string' },
  'homelab-api-headers-timeout': { type: 'string' },
} as const;

/** `httpConnectionLimits` from the --http-... limit flags, when any is given. */
function httpLimitsField(values: Record<string, unknown>): {
  httpConnectionLimits?: Partial<HttpConnectionLimits>;
} {
  const limits = connectionLimitsOption(values, 'http');
  return limits ? { httpConnectionLimits: limits } : {};
}

/** The HTTP listener's (`--http`) connection limit flags. */
const HTTP_LIMIT_FLAGS = {
  'http-max-connections': { type: 'string' },
  'http-max-connections-per-client': { type: 'string' },
  'http-headers-timeout': { type: 'string' },
} as const;

/**
 * `--PREFIX-max-connections N`, `--PREFIX-max-connections-per-client N` and
 * `--PREFIX-headers-timeout SECONDS` of an HTTP listener; undefined when none is given.
 */
function connectionLimitsOption(
  values: Record<string, unknown>,
  prefix: 'http' | 'homelab-api' | 'externaldns-webhook',
): Partial<HttpConnectionLimits> | undefined {
  const out: Partial<HttpConnectionLimits> = {};
  const whole = (flag: string): number | undefined => {
    const v = values[`${prefix}-${flag}`];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (typeof v !== 'string' || !/^\d+$/.test(v) || n < 1 || n > 1_000_000)
      throw new UsageError(`--${prefix}-${flag}: give a whole number from 1 to 1000000`);
    return n;
  };
  const max = whole('max-connections');
  if (max !== undefined) out.maxConnections = max;
  const perClient = whole('max-connections-per-client');
  if (perClient !== undefined) out.maxConnectionsPerClient = perClient;
  const headers = values[`${prefix}-headers-timeout`];
  if (headers !== undefined) {
    const seconds = Number(headers);
    if (typeof headers !== 'string' || headers.trim() === '' || !(seconds >= 0.01 && seconds <= 300))
      throw new UsageError(`--${prefix}-headers-timeout: give seconds, from 0.01 to 300`);
    out.headersTimeoutMs = Math.round(seconds * 1000);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** `--homelab-api HOST:PORT` and its caller flags; undefined without --homelab-api. */
function homelabApiOption(values: {
  'homelab-api'?: string | undefined;
  'homelab-api-secret-file'?: string | undefined;
  'homelab-api-namespace'?: string | undefined;
  'homelab-api-max-nonces'?: string | undefined;
  'homelab-api-max-connections'?: string | undefined;
  'homelab-api-max-connections-per-client'?: string | undefined;
  'homelab-api-headers-timeout'?: string | undefined;
}): HomelabApiSettings | undefined {
  const listen = values['homelab-api'];
  const secretFile = values['homelab-api-secret-file'];
  const namespace = values['homelab-api-namespace'];
  const maxNonces = values['homelab-api-max-nonces'];
  const connectionLimits = connectionLimitsOption(values, 'homelab-api');
  if (listen === undefined) {
    if (secretFile !== undefined || namespace !== undefined || maxNonces !== undefined || connectionLimits)
      throw new UsageError(
        '--homelab-api-secret-file, --homelab-api-namespace, --homelab-api-max-nonces and the --homelab-api-max-connections and headers timeout flags go with --homelab-api HOST:PORT',
      );
    return undefined;
  }
  if (!/^(\[[^\]]+\]|[^\s:]*):\d+$/.test(listen))
    throw new UsageError(`--homelab-api ${JSON.stringify(listen)}: give HOST:PORT, e.g. 0.0.0.0:7100`);
  if ((secretFile === undefined) !== (namespace === undefined))
    throw new UsageError(
      "--homelab-api-secret-file and --homelab-api-namespace go together: the one caller's secret and the namespace it writes to",
    );
  if (namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace))
    throw new UsageError(
      `--homelab-api-namespace ${JSON.stringify(namespace)}: give a namespace name (a DNS-1123 label)`,
    );
  let maxNoncesPerCaller: number | undefined;
  if (maxNonces !== undefined) {
    maxNoncesPerCaller = Number(maxNonces);
    if (!/^\d+$/.test(maxNonces) || maxNoncesPerCaller < 1 || maxNoncesPerCaller > 10_000_000)
      throw new UsageError('--homelab-api-max-nonces: give a whole number from 1 to 10000000');
  }
  return {
    listen,
    ...(secretFile !== undefined && namespace !== undefined ? { caller: { secretFile, namespace } } : {}),
    ...(maxNoncesPerCaller !== undefined ? { maxNoncesPerCaller } : {}),
    ...(connectionLimits ? { connectionLimits } : {}),
  };
}

/** The ExternalDNS webhook provider's flags (serve, operator). */
const EXTERNALDNS_WEBHOOK_FLAGS = {
  'externaldns-webhook': { type: 'string' },
  'externaldns-webhook-namespace': { type: 'string' },
  'externaldns-webhook-max-connections': { type: 'string' },
  'externaldns-webhook-max-connections-per-client': { type: 'string' },
  'externaldns-webhook-headers-timeout': { type: 'string' },
} as const;

/** `--externaldns-webhook-namespace NS` and its listen address; undefined without the namespace. */
function externalDnsWebhookOption(values: {
  'externaldns-webhook'?: string | undefined;
  'externaldns-webhook-namespace'?: string | undefined;
  'externaldns-webhook-max-connections'?: string | undefined;
  'externaldns-webhook-max-connections-per-client'?: string | undefined;
  'externaldns-webhook-headers-timeout'?: string | undefined;
}): ExternalDnsWebhookSettings | undefined {
  const listen = values['externaldns-webhook'];
  const namespace = values['externaldns-webhook-namespace'];
  const connectionLimits = connectionLimitsOption(values, 'externaldns-webhook');
  if (namespace === undefined) {
    if (listen !== undefined || connectionLimits)
      throw new UsageError(
        '--externaldns-webhook needs --externaldns-webhook-namespace NS: the namespace whose record sets the endpoints become',
      );
    return undefined;
  }
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace))
    throw new UsageError(
      `--externaldns-webhook-namespace ${JSON.stringify(namespace)}: give a namespace name (a DNS-1123 label)`,
    );
  if (listen !== undefined && !/^(\[[^\]]+\]|[^\s:]*):\d+$/.test(listen))
    throw new UsageError(
      `--externaldns-webhook ${JSON.stringify(listen)}: give HOST:PORT, e.g. ${DEFAULT_EXTERNALDNS_WEBHOOK}`,
    );
  return {
    listen: listen ?? DEFAULT_EXTERNALDNS_WEBHOOK,
    namespace,
    ...(connectionLimits ? { connectionLimits } : {}),
  };
}

/** The response rate limiting flags of `serve` and `server`. */
const RRL_FLAGS = {
  rrl: { type: 'string' },
  'rrl-rate': { type: 'string' },
  'rrl-slip': { type: 'string' },
  'rrl-table-size': { type: 'string' },
  'rrl-exempt': { type: 'string', multiple: true },
} as const;

/** Response rate limiting settings from the --rrl flags; none given: the defaults (on). */
function rrlOption(values: {
  rrl?: string | undefined;
  'rrl-rate'?: string | undefined;
  'rrl-slip'?: string | undefined;
  'rrl-table-size'?: string | undefined;
  'rrl-exempt'?: string[] | undefined;
}): { rrl?: RrlSettings } {
  const rrl: RrlSettings = {};
  if (values.rrl !== undefined) {
    const text = values.rrl.toLowerCase();
    if (!['on', 'off', 'true', 'false', '1', '0'].includes(text))
      throw new UsageError(`--rrl ${JSON.stringify(values.rrl)}: give on or off`);
    rrl.enabled = text === 'on' || text === 'true' || text === '1';
  }
  const whole = (flag: string, text: string | undefined, [min, max]: readonly [number, number]) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < min || n > max)
      throw new UsageError(`--${flag} ${JSON.stringify(text)}: give a whole number from ${min} to ${max}`);
    return n;
  };
  const rate = whole('rrl-rate', values['rrl-rate'], RRL_LIMITS.rate);
  if (rate !== undefined) rrl.rate = rate;
  const slip = whole('rrl-slip', values['rrl-slip'], RRL_LIMITS.slip);
  if (slip !== undefined) rrl.slip = slip;
  const tableSize = whole('rrl-table-size', values['rrl-table-size'], RRL_LIMITS.tableSize);
  if (tableSize !== undefined) rrl.tableSize = tableSize;
  if (values['rrl-exempt'] !== undefined) {
    const networks = values['rrl-exempt'].flatMap((v) => v.split(',')).map((v) => v.trim());
    if (networks.includes('none')) {
      if (networks.length > 1) throw new UsageError('--rrl-exempt none: give it alone (no client is exempt)');
      rrl.exempt = [];
    } else {
      for (const network of networks) {
        const parsed = parseCidr(network);
        if (typeof parsed === 'string') throw new UsageError(`--rrl-exempt ${parsed}`);
      }
      rrl.exempt = networks;
    }
  }
  return Object.keys(rrl).length > 0 ? { rrl } : {};
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`zonekeeper: ${(e as Error).message}\n\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`zonekeeper: ${(e as Error).stack ?? String(e)}\n`);
    // A command that failed may have left listeners, watchers or timers behind (e.g. serve when its
    // HTTP port is taken): exit rather than linger half-started.
    process.exit(1);
  },
);

/** `--change-safety-window SECONDS`: 0 to 3600 seconds, fractions allowed (tests use short windows). */
function changeSafetyWindowOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > 3600)
    throw new UsageError('--change-safety-window: give seconds, from 0 to 3600');
  return seconds * 1000;
}

function changeSafetyWindowField(value: string | undefined): { changeSafetyWindowMs?: number } {
  const ms = changeSafetyWindowOption(value);
  return ms === undefined ? {} : { changeSafetyWindowMs: ms };
}
