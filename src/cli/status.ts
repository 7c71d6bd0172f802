import type { Condition, Resource } from '../api/index.ts';
import { formatProblem, type ManifestProblem } from '../sources/manifests/manifest-source.ts';
import { printable } from './printable.ts';

interface ResourcesResponse {
  items: Resource[];
  problems?: ManifestProblem[];
  /** Endpoints the ExternalDNS webhook provider did not write (serve --externaldns-webhook-namespace). */
  externalDnsRefused?: { at: string; dnsName: string; recordType: string; code: string; message: string }[];
}

/** `zonekeeper status`: kubectl-style tables of what a running `serve` holds, from its HTTP API. */
export async function runStatus(url: string, out: NodeJS.WritableStream): Promise<number> {
  let body: ResourcesResponse;
  try {
    const res = await fetch(new URL('/api/v1/resources', url));
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    body = (await res.json()) as ResourcesResponse;
  } catch (e) {
    out.write(
      `cannot reach zonekeeper at ${printable(url)}: ${printable((e as Error).message)}; is \`zonekeeper serve\` running (see --http)?\n`,
    );
    return 1;
  }
  out.write(renderStatus(body));
  return 0;
}

export function renderStatus(body: ResourcesResponse): string {
  const ready = (r: Resource) => cond(r.status?.conditions, 'Ready');
  const sections: string[] = [];
  const classes = body.items.filter((r) => r.kind === 'DNSZoneClass');
  sections.push(
    table(
      ['CLASS', 'BACKEND', 'ZONES', 'READY'],
      classes.map((c) => [
        c.metadata.name,
        Object.keys((c.spec as { backend: object }).backend).join(','),
        String((c.status as { zones?: number } | undefined)?.zones ?? ''),
        ready(c).status,
      ]),
    ),
  );
  const zones = body.items.filter((r) => r.kind === 'DNSZone');
  sections.push(
    table(
      ['NAMESPACE', 'ZONE', 'DOMAIN', 'CLASS', 'SERIAL', 'RECORDS', 'READY', 'REASON'],
      zones.map((z) => {
        const s = z.status as { serial?: number; recordCount?: number } | undefined;
        const spec = z.spec as { domainName: string; className: string };
        return [
          z.metadata.namespace ?? '',
          z.metadata.name,
          spec.domainName,
          spec.className,
          String(s?.serial ?? ''),
          String(s?.recordCount ?? ''),
          ready(z).status,
          ready(z).reason,
        ];
      }),
    ),
  );
  const records = body.items.filter((r) => r.kind === 'DNSRecordSet');
  sections.push(
    table(
      ['NAMESPACE', 'RECORDSET', 'ZONE', 'NAME', 'TYPE', 'READY', 'REASON'],
      records.map((r) => {
        const s = r.status as { zone?: { name: string }; fqdn?: string } | undefined;
        const spec = r.spec as { name: string; type: string };
        return [
          r.metadata.namespace ?? '',
          r.metadata.name,
          s?.zone?.name ?? '',
          s?.fqdn ?? spec.name,
          spec.type,
          ready(r).status,
          ready(r).reason,
        ];
      }),
    ),
  );
  const notReady = body.items.filter((r) => ready(r).status !== 'True');
  const lines = notReady.map((r) =>
    printable(
      `  ${r.kind} ${r.metadata.namespace ? `${r.metadata.namespace}/` : ''}${r.metadata.name}: ${ready(r).message}`,
    ),
  );
  if (lines.length > 0) sections.push(`Not ready:\n${lines.join('\n')}\n`);
  const problems = body.problems ?? [];
  if (problems.length > 0)
    sections.push(
      `Manifest problems:\n${problems.map((p) => `  ${printable(formatProblem(p))}`).join('\n')}\n`,
    );
  const refused = body.externalDnsRefused ?? [];
  if (refused.length > 0)
    sections.push(
      `ExternalDNS endpoints not written (newest last):\n${refused
        .map((r) => `  ${printable(`${r.at} ${r.dnsName} ${r.recordType}: ${r.code}: ${r.message}`)}`)
        .join('\n')}\n`,
    );
  return sections.join('\n');
}

function cond(
  conditions: Condition[] | undefined,
  type: string,
): { status: string; reason: string; message: string } {
  const c = conditions?.find((x) => x.type === type);
  return c
    ? { status: c.status, reason: c.reason, message: c.message }
    : { status: 'Unknown', reason: '', message: 'not reconciled yet' };
}

function table(header: string[], cells: string[][]): string {
  if (cells.length === 0) return `${header.join('  ')}\n(none)\n`;
  const rows = cells.map((r) => r.map(printable));
  // A loop, not `Math.max(...column)`: 130,000 rows as arguments overflowed the stack.
  const widths = header.map((h) => h.length);
  for (const row of rows)
    for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i]!, (row[i] ?? '').length);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}
