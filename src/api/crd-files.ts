/** Writes the generated CRD files (`zonekeeper crds --out DIR`); the only module in src/api with I/O. */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdFileName, crdYaml } from './crds.ts';
import { GROUP } from './meta.ts';
import { KINDS } from './resource.ts';

/**
 * Writes one file per kind into `dir` (created if missing), removes generated files of kinds that no
 * longer exist, and returns the paths written. Files whose content is unchanged are not rewritten.
 */
export function writeCrdFiles(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const wanted = new Set(KINDS.map(crdFileName));
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith(`${GROUP}_`) && entry.endsWith('.yaml') && !wanted.has(entry))
      rmSync(join(dir, entry));
  }
  return KINDS.map((kind) => {
    const path = join(dir, crdFileName(kind));
    const content = crdYaml(kind);
    let current: string | undefined;
    try {
      current = readFileSync(path, 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== content) writeFileSync(path, content);
    return path;
  });
}
