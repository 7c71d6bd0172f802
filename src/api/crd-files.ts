/** Writes the generated CRD files (`zonekeeper crds --out DIR`); the only module in src/api with I/O. */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdFileName, crdYaml } from './crds.ts';
import type { FrontDoor } from './frontdoors/front-door.ts';
import { GROUP } from './meta.ts';
import { KINDS, type Kind } from './resource.ts';

/**
 * Writes one file per kind into `dir` (created if missing), removes generated files of kinds that no
 * longer exist, and returns the paths written. Files whose content is unchanged are not rewritten.
 */
export function writeCrdFiles(dir: string, frontDoors: readonly FrontDoor[] = []): string[] {
  mkdirSync(dir, { recursive: true });
  const kinds: (Kind | FrontDoor)[] = [...KINDS, ...frontDoors];
  const wanted = new Set(kinds.map(crdFileName));
  const groups = [GROUP, ...frontDoors.map((d) => d.group)];
  for (const entry of readdirSync(dir)) {
    if (groups.some((g) => entry.startsWith(`${g}_`)) && entry.endsWith('.yaml') && !wanted.has(entry))
      rmSync(join(dir, entry));
  }
  return kinds.map((kind) => {
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
