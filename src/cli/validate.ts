import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../api/index.ts';
import { type Resource, validateResource } from '../api/index.ts';
import {
  documentIdentity,
  type ManifestDocument,
  readManifests,
} from '../sources/manifests/load-manifests.ts';
import { formatProblem, locateProblem, type ManifestProblem } from '../sources/manifests/manifest-source.ts';
import { assembleZone } from '../zones/assemble.ts';
import { Catalog } from '../zones/catalog.ts';
import { parseRecordSetRecords } from '../zones/record-parse.ts';
import { resourceKey } from '../zones/resource-key.ts';
import { zoneAssemblyInput } from '../zones/zone-inputs.ts';

export interface ValidationReport {
  errors: ManifestProblem[];
  /** References that cannot be checked from these files alone (a zone or class defined elsewhere). */
  warnings: ManifestProblem[];
  resources: number;
}

/**
 * Checks manifests the way `serve` would take them: the schema and rules of each resource, the RDATA
 * of every record, and then the whole set together — zone ownership, conflicts, delegations.
 */
export async function validatePaths(paths: readonly string[]): Promise<ValidationReport> {
  const read = await readManifests(paths);
  const errors: ManifestProblem[] = read.fileErrors.map((e) => ({ ...e, code: 'YAML_INVALID' }));
  const warnings: ManifestProblem[] = [];
  const catalog = new Catalog();
  const docs = new Map<string, ManifestDocument>();
  const seen = new Map<string, ManifestDocument>();
  const valid: Resource[] = [];
  /** Zones whose manifest is invalid: record sets naming them say so, not that they do not exist. */
  const refusedZones = new Map<string, string>();
  for (const doc of read.documents) {
    const result = validateResource(doc.value);
    if (!result.ok) {
      const id = documentIdentity(doc.value);
      const object = id ? `${id.kind} ${id.key}` : undefined;
      for (const p of result.problems) errors.push(locateProblem(doc, p, object));
      const first = result.problems[0];
      if (id?.kind === 'DNSZone' && first) refusedZones.set(id.key, `${first.path}: ${first.message}`);
      continue;
    }
    const r = result.resource;
    const id = `${r.kind}/${resourceKey(r.metadata)}`;
    const first = seen.get(id);
    if (first) {
      errors.push({
        file: doc.file,
        document: doc.document,
        line: doc.line,
        object: `${r.kind} ${resourceKey(r.metadata)}`,
        code: 'DUPLICATE',
        message: `also defined in ${first.file} (document ${first.document}); remove one`,
      });
      continue;
    }
    seen.set(id, doc);
    docs.set(id, doc);
    // Without creation times, files order the objects: earlier documents count as older.
    const stamped = {
      ...r,
      metadata: {
        ...r.metadata,
        creationTimestamp: new Date(Date.UTC(2000, 0, 1, 0, 0, valid.length)).toISOString(),
      },
    };
    valid.push(stamped as Resource);
  }
  for (const r of valid) if (r.kind === 'DNSZoneClass') catalog.setClass(r as DNSZoneClass);
  for (const r of valid) if (r.kind === 'DNSZone') catalog.setZone(r as DNSZone);
  for (const [key, why] of refusedZones) if (!catalog.zones.has(key)) catalog.setZoneRefused(key, why);
  for (const r of valid) if (r.kind === 'DNSRecordSet') catalog.setRecord(r as DNSRecordSet);

  const report = (r: Resource, code: string, message: string, path?: string, asWarning = false) => {
    const id = `${r.kind}/${resourceKey(r.metadata)}`;
    const doc = docs.get(id)!;
    (asWarning ? warnings : errors).push({
      file: doc.file,
      document: doc.document,
      line: (path ? doc.lineOf(path) : undefined) ?? doc.line,
      object: `${r.kind} ${resourceKey(r.metadata)}`,
      ...(path ? { path } : {}),
      code,
      message,
    });
  };
  for (const [key, zone] of catalog.zones) {
    const verdict = catalog.zoneVerdict(key);
    if (verdict && !verdict.accepted) {
      report(
        zone,
        verdict.reason,
        verdict.message,
        verdict.reason === 'ClassNotFound' ? 'spec.className' : 'spec.domainName',
        verdict.reason === 'ClassNotFound',
      );
      continue;
    }
    const input = zoneAssemblyInput(catalog, key);
    if (!input) continue;
    for (const [recordKey, v] of assembleZone(input).verdicts) {
      if (v.accepted) continue;
      const rs = catalog.records.get(recordKey)!;
      const index = /^spec\.records\[(\d+)\]/.exec(v.message);
      report(rs, v.reason, v.message, index ? `spec.records[${index[1]}]` : undefined);
    }
  }
  for (const [key, rs] of catalog.records) {
    const resolution = catalog.recordResolution(key);
    if (!resolution || resolution.resolved) continue;
    const external = resolution.reason === 'ZoneNotFound';
    report(rs, resolution.reason, resolution.message, external ? undefined : 'spec.name', external);
    if (external) {
      // The zone is elsewhere; still check the RDATA syntax, relative names taken as relative to the root.
      const parsed = parseRecordSetRecords(rs, '.');
      if (!parsed.ok) {
        const index = /^spec\.records\[(\d+)\]/.exec(parsed.message);
        report(rs, 'Invalid', parsed.message, index ? `spec.records[${index[1]}]` : undefined);
      }
    }
  }
  const order = (a: ManifestProblem, b: ManifestProblem) =>
    a.file < b.file ? -1 : a.file > b.file ? 1 : (a.line ?? 0) - (b.line ?? 0);
  errors.sort(order);
  warnings.sort(order);
  return { errors, warnings, resources: valid.length };
}

export async function runValidate(paths: readonly string[], out: NodeJS.WritableStream): Promise<number> {
  const report = await validatePaths(paths);
  for (const p of report.errors) out.write(`error: ${formatProblem(p)}\n`);
  for (const p of report.warnings) out.write(`warning: ${formatProblem(p)}\n`);
  out.write(
    `${report.resources} valid resource(s), ${report.errors.length} error(s), ${report.warnings.length} warning(s)\n`,
  );
  return report.errors.length === 0 ? 0 : 1;
}
