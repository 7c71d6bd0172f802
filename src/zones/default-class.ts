/**
 * The zone class of objects whose API names none (front doors for other projects' DNS APIs): the
 * DNSZoneClass annotated `dns.zonekeeper.dev/is-default-class: "true"` — the convention of
 * IngressClass and StorageClass — or the only class when there is exactly one. Pure.
 */
import type { DNSZoneClass } from '../api/index.ts';

export const DEFAULT_CLASS_ANNOTATION = 'dns.zonekeeper.dev/is-default-class';

export type DefaultClass =
  | { ok: true; zoneClass: DNSZoneClass; why: 'annotated' | 'only' }
  | { ok: false; code: 'NO_DEFAULT_CLASS' | 'SEVERAL_DEFAULT_CLASSES'; message: string };

export function defaultZoneClass(classes: readonly DNSZoneClass[]): DefaultClass {
  const live = classes.filter((c) => !c.metadata.deletionTimestamp);
  const annotated = live.filter((c) => c.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true');
  if (annotated.length === 1) return { ok: true, zoneClass: annotated[0]!, why: 'annotated' };
  if (annotated.length > 1) {
    const names = annotated.map((c) => c.metadata.name).sort();
    return {
      ok: false,
      code: 'SEVERAL_DEFAULT_CLASSES',
      message: `DNSZoneClasses ${names.join(', ')} are all annotated ${DEFAULT_CLASS_ANNOTATION}: "true"; keep the annotation on one`,
    };
  }
  if (live.length === 1) return { ok: true, zoneClass: live[0]!, why: 'only' };
  return {
    ok: false,
    code: 'NO_DEFAULT_CLASS',
    message:
      live.length === 0
        ? 'no DNSZoneClass exists; create one (it is the default while it is the only one)'
        : `${live.length} DNSZoneClasses exist and none is the default; annotate one with ${DEFAULT_CLASS_ANNOTATION}: "true"`,
  };
}
