/**
 * events.k8s.io/v1 Events for what users should see in `kubectl describe` and `kubectl events`: a
 * condition turning False for a reason worth acting on (a conflict, a missing zone, an invalid record,
 * an unreachable backend), a zone or class becoming Ready, and an object recovering. Derived from
 * status transitions, so a reconcile that changes nothing emits nothing; rate-limited (a token bucket)
 * so that a mass change cannot flood the API server.
 */
import type { Condition, Kind, Resource } from '../../api/index.ts';
import type { Registry } from '../../metrics/registry.ts';
import type { EventInput, KubeApi } from './kube-api.ts';

export interface EventRecorderOptions {
  api: Pick<KubeApi, 'createEvent'>;
  /** events.k8s.io reportingController. */
  controller?: string;
  /** The pod or host name of this operator. */
  instance: string;
  /** Where events about cluster-scoped objects (DNSZoneClass) go: the API server requires "default". */
  clusterNamespace: string;
  /** Sustained events per second, and the burst above it (default 10/s, 100). */
  rate?: number;
  burst?: number;
  registry?: Registry;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  now?: () => Date;
}

/** Reasons that are a state on the way, not a problem to report. */
const QUIET_REASONS = new Set(['Pending']);

export class EventRecorder {
  private readonly options: EventRecorderOptions;
  private tokens: number;
  private last: number;
  private readonly sent?: ReturnType<Registry['counter']>;

  constructor(options: EventRecorderOptions) {
    this.options = options;
    this.tokens = options.burst ?? 100;
    this.last = Date.now();
    this.sent = options.registry?.counter(
      'zonekeeper_kube_events_total',
      'events.k8s.io Events by type and result (sent, dropped by the rate limit, failed).',
      ['type', 'result'],
    );
  }

  /** Emits the events that a status change from `before` to `after` deserves. */
  statusChanged(before: Resource, after: Resource): void {
    const event = eventFor(before, after);
    if (event) this.record(event);
  }

  /**
   * Fire and forget: an event that cannot be written is counted and logged, never retried. It goes
   * into the namespace of the object it regards, unless `namespace` names another (an object in a
   * terminating namespace, which takes no new Events).
   */
  record(event: EventInput, namespace?: string): void {
    const { regarding } = event;
    const what = `${regarding.kind} ${regarding.namespace ? `${regarding.namespace}/` : ''}${regarding.name}`;
    if (event.type === 'Warning') this.options.log?.('warn', `${what}: ${event.reason}: ${event.note}`);
    if (!this.take()) {
      this.sent?.labels(event.type, 'dropped').inc();
      return;
    }
    const into = namespace ?? event.regarding.namespace ?? this.options.clusterNamespace;
    const now = this.options.now?.() ?? new Date();
    this.options.api
      .createEvent(
        into,
        event,
        this.options.controller ?? 'dns.zonekeeper.dev/operator',
        this.options.instance,
        now,
      )
      .then(
        () => this.sent?.labels(event.type, 'sent').inc(),
        (e: unknown) => {
          this.sent?.labels(event.type, 'failed').inc();
          this.options.log?.('warn', `could not record event ${event.reason} on ${event.regarding.name}`, {
            error: e instanceof Error ? e.message : String(e),
          });
        },
      );
  }

  private take(): boolean {
    const now = Date.now();
    const rate = this.options.rate ?? 10;
    const burst = this.options.burst ?? 100;
    this.tokens = Math.min(burst, this.tokens + ((now - this.last) / 1000) * rate);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/**
 * The event for a status change, if any: a Warning when a condition became False for a reason worth
 * reporting (Accepted first: it names the cause), a Normal one when the object became Ready — always
 * for zones and classes, and for record sets only when they recover from a failure (10,000 new record
 * sets must not mean 10,000 events).
 */
export function eventFor(before: Resource, after: Resource): EventInput | undefined {
  const was = (type: string) => find(before.status?.conditions, type);
  const now = (type: string) => find(after.status?.conditions, type);
  const regarding = {
    kind: after.kind as Kind,
    name: after.metadata.name,
    ...(after.metadata.namespace ? { namespace: after.metadata.namespace } : {}),
    ...(after.metadata.uid ? { uid: after.metadata.uid } : {}),
    ...(after.metadata.resourceVersion ? { resourceVersion: after.metadata.resourceVersion } : {}),
  };
  if (after.kind === 'Domain') return domainEvent(before, after, regarding);
  for (const type of ['Accepted', 'Programmed', 'Ready']) {
    const c = now(type);
    const p = was(type);
    if (c?.status !== 'False' || QUIET_REASONS.has(c.reason)) continue;
    if (p && p.status === c.status && p.reason === c.reason && p.message === c.message) return undefined;
    return { regarding, type: 'Warning', reason: c.reason, action: actionFor(after.kind), note: c.message };
  }
  const ready = now('Ready');
  const previous = was('Ready');
  if (ready?.status === 'True' && previous?.status !== 'True') {
    if (after.kind === 'DNSRecordSet' && previous === undefined) return undefined;
    return { regarding, type: 'Normal', reason: 'Ready', action: actionFor(after.kind), note: ready.message };
  }
  return undefined;
}

/**
 * A Domain's event: Warning VerificationLost when Verified turns False after being True (ownership is
 * never silently kept), Warning with the reason when a claim is refused for another namespace's older
 * claim, Normal Verified when it becomes True.
 */
function domainEvent(
  before: Resource,
  after: Resource,
  regarding: EventInput['regarding'],
): EventInput | undefined {
  const expiring = find(after.status?.conditions, 'RegistrationExpiring');
  const wasExpiring = find(before.status?.conditions, 'RegistrationExpiring');
  if (
    expiring?.status === 'True' &&
    (wasExpiring?.status !== 'True' || wasExpiring.reason !== expiring.reason)
  )
    return {
      regarding,
      type: 'Warning',
      reason: 'RegistrationExpiring',
      action: 'ReadRegistration',
      note: expiring.message,
    };
  const p = find(before.status?.conditions, 'Verified');
  const c = find(after.status?.conditions, 'Verified');
  if (!c || (p && p.status === c.status && p.reason === c.reason)) return undefined;
  if (c.status === 'True')
    return { regarding, type: 'Normal', reason: 'Verified', action: 'VerifyDomain', note: c.message };
  if (c.status === 'False' && p?.status === 'True')
    return {
      regarding,
      type: 'Warning',
      reason: 'VerificationLost',
      action: 'VerifyDomain',
      note: c.message,
    };
  if (c.reason === 'ClaimedByOtherNamespace' || c.reason === 'PublicSuffix')
    return { regarding, type: 'Warning', reason: c.reason, action: 'VerifyDomain', note: c.message };
  return undefined;
}

function actionFor(kind: string): string {
  return kind === 'DNSZoneClass' ? 'CheckBackend' : kind === 'DNSZone' ? 'ProgramZone' : 'PublishRecordSet';
}

function find(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
