/**
 * Failure injection for the controller's two durable steps — saving a serial (SerialStore.set) and
 * programming the backend (Backend.applyZone / servedSerial) — and a record of every serial the
 * backend ever served with its content, to check that one serial always means one content.
 */
import type { ApplyResult, Backend, ProgrammedZone } from '../../src/backends/backend.ts';
import { BuiltinBackend } from '../../src/backends/builtin/builtin-backend.ts';
import type { SerialStore, ZoneSerialState } from '../../src/control/serial-store.ts';
import { type Name, nameKey } from '../../src/dns/name.ts';
import { printRdata } from '../../src/dns/rdata.ts';
import { RRType, typeName } from '../../src/dns/rrtype.ts';
import type { ZoneSnapshot } from '../../src/server/zone-snapshot.ts';
import { ZoneTable } from '../../src/server/zone-table.ts';

/** The steps a failure can be injected at. */
export type FailureStep =
  /** A serial save that carries no hash: a live change (hash computed later). */
  | 'serial'
  /** A serial save with the hash of a whole model: start-up, or every change with hashOnChange. */
  | 'serial+hash'
  /** The delayed save of the content hash for a serial already saved. */
  | 'hash'
  /** applyZone rejects before the backend changed anything. */
  | 'apply'
  /** applyZone changes the backend, then rejects (a lost response). */
  | 'apply-lost'
  /** servedSerial rejects after a successful apply. */
  | 'served';

/** Fails the next `times` operations at each armed step; counts what it failed. */
export class FailurePlan {
  private readonly armed = new Map<FailureStep, number>();
  readonly failed = new Map<FailureStep, number>();
  /** When set, called for every operation; returning a step fails it (a random plan). */
  chooser?: (step: FailureStep) => boolean;

  arm(step: FailureStep, times: number): void {
    this.armed.set(step, times);
  }

  disarm(): void {
    this.armed.clear();
    this.chooser = undefined;
  }

  remaining(step: FailureStep): number {
    return this.armed.get(step) ?? 0;
  }

  /** Throws the injected error when this operation is to fail. */
  check(step: FailureStep): void {
    const left = this.armed.get(step) ?? 0;
    const fail = left > 0 || this.chooser?.(step) === true;
    if (!fail) return;
    if (left > 0) this.armed.set(step, left - 1);
    this.failed.set(step, (this.failed.get(step) ?? 0) + 1);
    throw new Error(`injected ${step} failure`);
  }

  count(step?: FailureStep): number {
    if (step) return this.failed.get(step) ?? 0;
    let n = 0;
    for (const v of this.failed.values()) n += v;
    return n;
  }
}

/**
 * A serial store with the semantics of a state file written whole: `set` updates what `get` returns
 * at once and then writes everything; a failed write leaves the new value in memory but not on disk,
 * and the next successful write (of any origin) persists all of memory. `durable` is what would
 * survive a crash.
 */
export class FlakySerialStore implements SerialStore {
  readonly memory = new Map<string, ZoneSerialState>();
  durable = new Map<string, ZoneSerialState>();
  readonly plan: FailurePlan;
  /** Every set call that resolved, in order. */
  readonly saved: { origin: string; state: ZoneSerialState }[] = [];

  constructor(plan: FailurePlan, durable?: ReadonlyMap<string, ZoneSerialState>) {
    this.plan = plan;
    for (const [k, v] of durable ?? []) {
      this.memory.set(k, { ...v });
      this.durable.set(k, { ...v });
    }
  }

  get(origin: Name): ZoneSerialState | undefined {
    return this.memory.get(nameKey(origin));
  }

  async set(origin: Name, state: ZoneSerialState): Promise<void> {
    this.memory.set(nameKey(origin), { ...state });
    await Promise.resolve();
    this.plan.check(state.hash === undefined ? 'serial' : this.isHashOnly(origin, state));
    this.durable = new Map([...this.memory].map(([k, v]) => [k, { ...v }]));
    this.saved.push({ origin: nameKey(origin), state: { ...state } });
  }

  /** A save of the hash for the serial already durable ('hash'), or a new serial with its hash. */
  private isHashOnly(origin: Name, state: ZoneSerialState): FailureStep {
    const before = this.durable.get(nameKey(origin));
    return before && before.serial === state.serial && before.hash === undefined ? 'hash' : 'serial+hash';
  }
}

/** The served content of a zone as sorted lines (the SOA's serial left out), to compare versions. */
export function snapshotContent(zone: ZoneSnapshot): string {
  const lines: string[] = [];
  for (const node of zone.nodes.values()) {
    for (const rrset of node.rrsets.values()) {
      if (rrset.type === RRType.SOA) continue;
      for (const rdata of rrset.rdata)
        lines.push(`${nameKey(rrset.owner)} ${rrset.ttl} ${typeName(rrset.type)} ${printRdata(rdata)}`);
    }
  }
  return lines.sort().join('\n');
}

/**
 * The built-in backend on its own zone table with failures injected, recording the content served
 * under each serial after every apply. `violations` lists every serial seen with two contents.
 */
export class RecordingBackend implements Backend {
  readonly name = 'recording';
  readonly table = new ZoneTable();
  private readonly inner = new BuiltinBackend(this.table);
  readonly capabilities = this.inner.capabilities;
  readonly plan: FailurePlan;
  /** Per origin: serial → content served under it. */
  readonly history: Map<string, Map<number, string>>;
  readonly violations: string[] = [];

  constructor(plan: FailurePlan, history?: Map<string, Map<number, string>>) {
    this.plan = plan;
    this.history = history ?? new Map();
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult | undefined> {
    this.plan.check('apply');
    await this.inner.applyZone(zone);
    this.record(zone.origin);
    this.plan.check('apply-lost');
    return undefined;
  }

  async deleteZone(origin: Name): Promise<void> {
    await this.inner.deleteZone(origin);
  }

  async servedSerial(origin: Name): Promise<number | undefined> {
    this.plan.check('served');
    return this.inner.servedSerial(origin);
  }

  /** The serial and content served now. */
  served(origin: Name): { serial: number; content: string } | undefined {
    const zone = this.table.get(origin);
    return zone ? { serial: zone.serial, content: snapshotContent(zone) } : undefined;
  }

  /** Notes what is served under the current serial; a second content under one serial is a violation. */
  record(origin: Name): void {
    const now = this.served(origin);
    if (!now) return;
    let serials = this.history.get(nameKey(origin));
    if (!serials) {
      serials = new Map();
      this.history.set(nameKey(origin), serials);
    }
    const before = serials.get(now.serial);
    if (before === undefined) serials.set(now.serial, now.content);
    else if (before !== now.content)
      this.violations.push(
        `${origin} serial ${now.serial} served with two contents:\n--- first\n${before}\n--- then\n${now.content}`,
      );
  }
}
