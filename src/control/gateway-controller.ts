/**
 * Gateway API hostnames → DNSRecordSets. Level-triggered over the whole picture: every run computes
 * the record sets all Gateways and their routes should have (src/zones/gateway-records.ts), creates
 * or replaces the ones that differ, deletes the ones this manager made that nobody asks for any more
 * (garbage collection by label, across namespaces), and sets the Gateways' address annotation and
 * the conflict annotation of Gateways and routes (their `status` belongs to the gateway
 * implementation). A record set another manager made at a hostname is never overwritten: the
 * hostname is reported as a conflict (annotation and a Warning Event) instead.
 */
import type { DNSRecordSet, DNSZone, Domain } from '../api/index.ts';
import {
  ADDRESS_ANNOTATION,
  CONFLICT_ANNOTATION,
  compareClaims,
  GATEWAY_MANAGER,
  type GatewayTarget,
  gatewayAddress,
  HOSTNAME_ANNOTATION,
  type HostnameClaim,
  type HostnamePlan,
  type ListenerAdmission,
  MANAGED_BY_LABEL,
  OWNER_LABEL,
  ownerLabel,
  type ParentRef,
  planHostname,
  recordSetName,
  routeAttachment,
  zoneHolding,
} from '../zones/gateway-records.ts';
import { resourceKey } from '../zones/resource-key.ts';
import { domainText } from '../zones/zone-name-servers.ts';
import { jsonEqual } from './conditions.ts';
import type { ResourceStore } from './resource-store.ts';
import { WorkQueue } from './work-queue.ts';

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
export type GatewayKind = 'GatewayClass' | 'Gateway' | 'HTTPRoute' | 'GRPCRoute' | 'TLSRoute';
export const ROUTE_KINDS: readonly GatewayKind[] = ['HTTPRoute', 'GRPCRoute', 'TLSRoute'];

/** The parts of Gateway API objects this controller reads. */
export interface GatewayObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    creationTimestamp?: string;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec?: {
    listeners?: (ListenerAdmission & { hostname?: string })[];
    hostnames?: string[];
    parentRefs?: ParentRef[];
    /** A Gateway's: the GatewayClass it belongs to. */
    gatewayClassName?: string;
    /** A GatewayClass's: the gateway implementation that manages its Gateways. */
    controllerName?: string;
  };
  status?: {
    addresses?: { type?: string; value: string }[];
    /** A route's: the parents the gateway implementation accepted it by (Gateway API RouteStatus). */
    parents?: {
      parentRef: ParentRef;
      controllerName?: string;
      conditions?: { type: string; status: string }[];
    }[];
  };
}

/** Where Gateway API objects come from (the operator: reflectors over the API server). */
export interface GatewaySource {
  list(kind: GatewayKind): GatewayObject[];
  /** Called on every change of any kind. */
  watch(handler: () => void): () => void;
}

/** How record sets and annotations are written, and Events recorded. */
export interface GatewayWriter {
  /** Creates or replaces a record set (with an owner reference to `owner` when in its namespace). */
  apply(recordSet: DNSRecordSet, owner: HostnameClaim['owner'] | undefined): Promise<void>;
  delete(namespace: string, name: string): Promise<void>;
  /** Sets (string) or removes (null) annotations of a Gateway API object. */
  annotate(
    kind: GatewayKind,
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<void>;
  event(kind: GatewayKind, object: GatewayObject, reason: string, note: string): void;
}

export interface GatewayControllerOptions {
  store: ResourceStore;
  source: GatewaySource;
  writer: GatewayWriter;
  /** Where Gateways' DNS addresses live, e.g. gw.example.net (a zone served here). Without it: A/AAAA. */
  targetDomain?: string;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

const ALL = 'all';

/**
 * A zone served here: Accepted (it holds its domain). Not Ready: a zone is not Ready for a moment
 * whenever a change is being programmed, and its hostnames must not come and go with that.
 */
function isServed(zone: DNSZone): boolean {
  return (
    !zone.metadata.deletionTimestamp &&
    (zone.status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True') ?? false)
  );
}

export class GatewayController {
  private readonly options: GatewayControllerOptions;
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(options: GatewayControllerOptions) {
    this.options = options;
    this.queue = new WorkQueue(() => this.reconcile(), { baseDelayMs: 200, maxDelayMs: 30_000 });
    this.queue.onResult = (_key, error) => {
      if (error !== undefined) options.log?.('warn', `gateway DNS: ${(error as Error).message}; retrying`);
    };
  }

  start(): void {
    this.unsubscribe.push(this.options.source.watch(() => this.queue.add(ALL)));
    this.unsubscribe.push(
      this.options.store.watch((event) => {
        if (event.kind === 'DNSZone' || event.kind === 'DNSRecordSet' || event.kind === 'Domain')
          this.queue.add(ALL);
      }),
    );
    this.queue.add(ALL);
    this.queue.start();
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.shutdown();
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  private async reconcile(): Promise<undefined> {
    const { store, source, writer, targetDomain } = this.options;
    const zones = (store.list('DNSZone') as DNSZone[]).filter(isServed);
    const domains = store.list('Domain') as Domain[];
    const existing = store.list('DNSRecordSet') as DNSRecordSet[];
    const gateways = source.list('Gateway').filter((g) => !g.metadata.deletionTimestamp);
    /** GatewayClass name → its controllerName: whose status.parents entries count for its Gateways. */
    const controllers = new Map<string, string>();
    for (const c of source.list('GatewayClass'))
      if (typeof c.spec?.controllerName === 'string') controllers.set(c.metadata.name, c.spec.controllerName);

    const desired = new Map<string, { recordSet: DNSRecordSet; owner?: HostnameClaim['owner'] }>();
    /** Conflict messages per object (`Kind/namespace/name`). */
    const conflicts = new Map<string, string[]>();
    const owners = new Map<string, { kind: GatewayKind; object: GatewayObject }>();
    /** Why a hostname is not published (for the log of deletions). */
    const skipped = new Map<string, string>();
    const note = (kind: GatewayKind, object: GatewayObject) => {
      const id = `${kind}/${object.metadata.namespace}/${object.metadata.name}`;
      owners.set(id, { kind, object });
      return id;
    };
    /** Every claim of a hostname with its plan; which one publishes is decided once all are known. */
    const claims: {
      kind: GatewayKind;
      id: string;
      claim: HostnameClaim;
      plan: HostnamePlan;
      gatewayCreated?: string;
      ownerCreated?: string;
    }[] = [];
    const claim = (
      kind: GatewayKind,
      object: GatewayObject,
      gateway: GatewayObject,
      hostname: string,
      target: GatewayTarget,
    ) => {
      const id = note(kind, object);
      const c: HostnameClaim = {
        hostname,
        owner: {
          kind,
          apiVersion: `${GATEWAY_GROUP}/v1`,
          namespace: object.metadata.namespace,
          name: object.metadata.name,
          uid: object.metadata.uid,
        },
        gateway: { namespace: gateway.metadata.namespace, name: gateway.metadata.name },
      };
      claims.push({
        kind,
        id,
        claim: c,
        plan: planHostname(c, zones, domains, target, existing),
        ...(gateway.metadata.creationTimestamp ? { gatewayCreated: gateway.metadata.creationTimestamp } : {}),
        ...(object.metadata.creationTimestamp ? { ownerCreated: object.metadata.creationTimestamp } : {}),
      });
    };
    const conflict = (id: string, message: string) =>
      conflicts.set(id, [...(conflicts.get(id) ?? []), message]);

    const targets = new Map<string, GatewayTarget>();
    for (const g of gateways) {
      note('Gateway', g);
      const addresses = g.status?.addresses ?? [];
      const ips = addresses.filter((a) => a.type === undefined || a.type === 'IPAddress').map((a) => a.value);
      const target: GatewayTarget = {
        ...(targetDomain ? { address: gatewayAddress(g.metadata.uid, targetDomain) } : {}),
        ipv4: ips.filter((a) => !a.includes(':')),
        ipv6: ips.filter((a) => a.includes(':')),
      };
      targets.set(`${g.metadata.namespace}/${g.metadata.name}`, target);
      // The address itself: A/AAAA in the zone that holds the target domain.
      if (target.address) {
        const zone = zoneHolding(target.address, zones);
        if (zone) {
          const origin = domainText(zone.spec.domainName);
          const relative = target.address.slice(0, -(origin.length + 1)) || '@';
          const owner = ownerLabel({
            kind: 'Gateway',
            apiVersion: '',
            namespace: g.metadata.namespace,
            name: g.metadata.name,
            uid: '',
          });
          // An implementation that gives a host name instead of addresses (a cloud load balancer): CNAME.
          const hostnames = addresses
            .filter((a) => a.type === 'Hostname')
            .map((a) => `${domainText(a.value)}.`);
          const sets: [DNSRecordSet['spec']['type'], string[]][] =
            target.ipv4.length + target.ipv6.length > 0
              ? [
                  ['A', target.ipv4],
                  ['AAAA', target.ipv6],
                ]
              : [['CNAME', hostnames.slice(0, 1)]];
          for (const [type, records] of sets) {
            if (records.length === 0) continue;
            const r: DNSRecordSet = {
              apiVersion: 'dns.zonekeeper.dev/v1alpha1',
              kind: 'DNSRecordSet',
              metadata: {
                name: `${recordSetName(`gw-${type.toLowerCase()}`, target.address)}`,
                namespace: zone.metadata.namespace ?? 'default',
                labels: { [MANAGED_BY_LABEL]: GATEWAY_MANAGER, [OWNER_LABEL]: owner },
                annotations: { 'dns.zonekeeper.dev/hostname': target.address },
              },
              spec: { zoneRef: { name: zone.metadata.name }, name: relative, type, records: [...records] },
            };
            desired.set(resourceKey(r.metadata), { recordSet: r });
          }
        }
      }
      for (const l of g.spec?.listeners ?? []) if (l.hostname) claim('Gateway', g, g, l.hostname, target);
    }
    for (const kind of ROUTE_KINDS) {
      for (const route of source.list(kind)) {
        if (route.metadata.deletionTimestamp) continue;
        note(kind, route);
        for (const ref of route.spec?.parentRefs ?? []) {
          if ((ref.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (ref.kind ?? 'Gateway') !== 'Gateway')
            continue;
          const key = `${ref.namespace ?? route.metadata.namespace}/${ref.name}`;
          const gateway = gateways.find((g) => `${g.metadata.namespace}/${g.metadata.name}` === key);
          if (!gateway) continue;
          // Only through a Gateway that took the route: accepted by it, admitted by a listener.
          const attachment = routeAttachment(
            {
              namespace: route.metadata.namespace,
              ...(route.status?.parents ? { parents: route.status.parents } : {}),
            },
            ref,
            {
              namespace: gateway.metadata.namespace,
              name: gateway.metadata.name,
              listeners: gateway.spec?.listeners ?? [],
              ...(controllers.has(gateway.spec?.gatewayClassName ?? '')
                ? { controllerName: controllers.get(gateway.spec!.gatewayClassName!)! }
                : {}),
            },
          );
          if (!attachment.attached) {
            for (const h of route.spec?.hostnames ?? [])
              skipped.set(
                domainText(h),
                `NotAttached: ${kind} ${route.metadata.namespace}/${route.metadata.name} is ${attachment.message}`,
              );
            continue;
          }
          for (const h of route.spec?.hostnames ?? []) claim(kind, route, gateway, h, targets.get(key)!);
        }
      }
    }

    // One claim per hostname publishes: the oldest Gateway's (compareClaims), among the claims that
    // could publish at all (a claim without a verified Domain must not keep a hostname from another).
    // A claim through another Gateway that loses is told why; one through the same Gateway asks for the
    // same answer and is not a conflict.
    const reserved = new Set(
      [...desired.values()].map(({ recordSet }) => recordSet.metadata.annotations?.[HOSTNAME_ANNOTATION]),
    );
    const byHostname = new Map<string, typeof claims>();
    for (const c of claims) {
      const h = domainText(c.claim.hostname);
      byHostname.set(h, [...(byHostname.get(h) ?? []), c]);
    }
    for (const [hostname, list] of byHostname) {
      const ready = list.filter((c) => c.plan.kind === 'publish').sort(compareClaims);
      for (const c of list)
        if (c.plan.kind === 'skip') {
          skipped.set(hostname, `${c.plan.reason}: ${c.plan.message}`);
          if (c.plan.reason === 'Conflict') conflict(c.id, c.plan.message);
        }
      const winner = ready[0];
      if (winner?.plan.kind !== 'publish') continue;
      if (reserved.has(hostname)) {
        const message = `${hostname} is a Gateway's DNS address; it is not published for ${winner.kind} ${winner.claim.owner.namespace}/${winner.claim.owner.name}`;
        for (const c of ready) conflict(c.id, message);
        continue;
      }
      for (const r of winner.plan.recordSets)
        desired.set(resourceKey(r.metadata), { recordSet: r, owner: winner.claim.owner });
      const by = `${winner.claim.gateway.namespace}/${winner.claim.gateway.name}`;
      for (const c of ready.slice(1)) {
        if (`${c.claim.gateway.namespace}/${c.claim.gateway.name}` === by) continue;
        skipped.set(hostname, `Conflict: claimed through Gateway ${by}`);
        conflict(
          c.id,
          `${hostname} is published for Gateway ${by}, which is older than Gateway ${c.claim.gateway.namespace}/${c.claim.gateway.name} (the oldest Gateway claiming a hostname wins); remove the hostname from one of them`,
        );
      }
    }

    // Writes: first what nobody asks for any more (only what this manager made: a claim that lost goes
    // before the winner's record set comes), then what differs.
    for (const r of existing) {
      if (r.metadata.labels?.[MANAGED_BY_LABEL] !== GATEWAY_MANAGER || r.metadata.deletionTimestamp) continue;
      if (desired.has(resourceKey(r.metadata))) continue;
      this.options.log?.('info', 'gateway DNS: deleting a record set nothing asks for any more', {
        recordSet: resourceKey(r.metadata),
        hostname: r.metadata.annotations?.[HOSTNAME_ANNOTATION],
        owner: r.metadata.labels?.[OWNER_LABEL],
        skipped: skipped.get(r.metadata.annotations?.[HOSTNAME_ANNOTATION] ?? '') ?? 'no claim',
      });
      await writer.delete(r.metadata.namespace ?? 'default', r.metadata.name);
    }
    for (const [key, { recordSet, owner }] of desired) {
      const have = existing.find((r) => resourceKey(r.metadata) === key);
      if (
        have &&
        jsonEqual(have.spec, recordSet.spec) &&
        jsonEqual(have.metadata.labels ?? {}, {
          ...(have.metadata.labels ?? {}),
          ...recordSet.metadata.labels,
        })
      )
        continue;
      await writer.apply(
        recordSet,
        owner && owner.namespace === recordSet.metadata.namespace ? owner : undefined,
      );
    }
    for (const [id, { kind, object }] of owners) {
      const want: Record<string, string | null> = {};
      const messages = conflicts.get(id);
      const current = object.metadata.annotations ?? {};
      const text = messages ? messages.join('; ') : null;
      if ((current[CONFLICT_ANNOTATION] ?? null) !== text) want[CONFLICT_ANNOTATION] = text;
      if (kind === 'Gateway') {
        const address = targets.get(`${object.metadata.namespace}/${object.metadata.name}`)?.address ?? null;
        if ((current[ADDRESS_ANNOTATION] ?? null) !== address) want[ADDRESS_ANNOTATION] = address;
      }
      if (Object.keys(want).length === 0) continue;
      await writer.annotate(kind, object.metadata.namespace, object.metadata.name, want);
      if (text !== null && current[CONFLICT_ANNOTATION] !== text)
        writer.event(kind, object, 'DNSConflict', text);
    }
    return undefined;
  }
}
