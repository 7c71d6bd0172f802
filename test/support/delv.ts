/**
 * `delv` (BIND's validating lookup tool) against an authoritative server on loopback, with one zone's
 * DNSKEY as its only trust anchor: the answer is validated from that key down, as a validating resolver
 * would once the parent holds the DS.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { dig, rdataOf } from './dig.ts';

const run = promisify(execFile);

export interface Validated {
  /** delv's verdict line: "fully validated", "negative response, fully validated", or the failure. */
  verdict: string;
  /** The answer lines (without comments). */
  answer: string[];
  raw: string;
}

/** Writes a trust-anchors file holding the zone's KSK/CSK DNSKEYs (flags 257) as read over DNS. */
export async function trustAnchorFile(dir: string, port: number, zone: string): Promise<string> {
  const keys = rdataOf(await dig(port, zone, 'DNSKEY'), 'DNSKEY').filter((k) => k.startsWith('257 '));
  if (keys.length === 0) throw new Error(`${zone} publishes no key-signing DNSKEY`);
  const name = zone.endsWith('.') ? zone : `${zone}.`;
  const lines = keys.map((k) => {
    const [flags, protocol, algorithm, ...key] = k.split(/\s+/);
    return `  "${name}" static-key ${flags} ${protocol} ${algorithm} "${key.join('')}";`;
  });
  const file = path.join(dir, `anchor-${name}conf`);
  await writeFile(file, `trust-anchors {\n${lines.join('\n')}\n};\n`);
  return file;
}

export async function delv(
  port: number,
  anchors: string,
  zone: string,
  name: string,
  type: string,
): Promise<Validated> {
  const result = await run(
    'delv',
    ['@127.0.0.1', '-p', String(port), '-a', anchors, `+root=${zone}`, name, type],
    {
      timeout: 20_000,
    },
  ).catch((e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
  const raw = `${result.stdout}${result.stderr}`;
  const lines = raw.split('\n');
  const verdict =
    lines.find((l) => /^; (.*validated|unsigned answer|validation failed)/.test(l))?.slice(2) ??
    lines.find((l) => l.startsWith(';; '))?.slice(3) ??
    raw.trim();
  const answer = result.stdout.split('\n').filter((l) => l.trim() !== '' && !l.startsWith(';'));
  return { verdict, answer, raw };
}

/**
 * Writes a trust-anchors file holding DS records (`static-ds`) for the zone: what a parent holding
 * exactly those DS would vouch for.
 */
export async function dsTrustAnchorFile(dir: string, zone: string, ds: readonly string[]): Promise<string> {
  const name = zone.endsWith('.') ? zone : `${zone}.`;
  const lines = ds.map((d) => {
    const [tag, algorithm, type, ...digest] = d.trim().split(/\s+/);
    return `  "${name}" static-ds ${tag} ${algorithm} ${type} "${digest.join('')}";`;
  });
  const file = path.join(dir, `anchor-ds-${name}conf`);
  await writeFile(file, `trust-anchors {\n${lines.join('\n')}\n};\n`);
  return file;
}
