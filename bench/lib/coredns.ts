/**
 * CoreDNS for the throughput benchmark, built from its Go module (`github.com/coredns/coredns`, whose
 * default plugin set includes `file`) into a cache outside the clone, once per version:
 * `~/.cache/zonekeeper/bin/coredns-<version>`. Building needs Go and the module proxy the first time.
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from './proc.ts';

export const COREDNS_VERSION = 'v1.14.7';

export function coreDnsPath(): string {
  return path.join(os.homedir(), '.cache/zonekeeper/bin', `coredns-${COREDNS_VERSION}`);
}

/** The CoreDNS binary, built first when it is not cached yet. */
export async function ensureCoreDns(log: (message: string) => void): Promise<string> {
  const target = coreDnsPath();
  if (existsSync(target)) return target;
  mkdirSync(path.dirname(target), { recursive: true });
  const gobin = mkdtempSync(path.join(path.dirname(target), '.coredns-build-'));
  log(`building CoreDNS ${COREDNS_VERSION} from its Go module into ${target} (once)`);
  try {
    const toolchain = process.env.GOTOOLCHAIN ?? 'auto';
    const module = `github.com/coredns/coredns@${COREDNS_VERSION}`;
    await run('env', [`GOBIN=${gobin}`, `GOTOOLCHAIN=${toolchain}`, 'go', 'install', '-trimpath', module], {
      timeoutMs: 30 * 60_000,
    });
    renameSync(path.join(gobin, 'coredns'), target);
  } finally {
    rmSync(gobin, { recursive: true, force: true });
  }
  return target;
}

/**
 * A Corefile serving one zone file with the `file` plugin: authoritative only, no cache plugin, no
 * logging, and the zone file's periodic reload off (`reload 0`).
 */
export function corefile(origin: string, zoneFile: string, port: number): string {
  return [
    `${origin}:${port} {`,
    '    bind 127.0.0.1',
    `    file ${zoneFile} {`,
    '        reload 0',
    '    }',
    '}',
    '',
  ].join('\n');
}
