/**
 * The front doors Zonekeeper ships: each is one folder under `src/api/frontdoors/<name>/` and one line
 * here; `--front-door MODULE` loads another from a module (development and tests).
 */

import { DATUM_FRONT_DOORS } from './datum/index.ts';
import { EXTERNALDNS_FRONT_DOORS } from './externaldns/index.ts';
import type { FrontDoor } from './front-door.ts';
import { GARDENER_FRONT_DOORS } from './gardener/index.ts';
import { HOMELAB_FRONT_DOORS } from './homelab/index.ts';
import { KUBIZONE_FRONT_DOORS } from './kubizone/index.ts';

export const REGISTERED_FRONT_DOORS: readonly FrontDoor[] = [
  ...HOMELAB_FRONT_DOORS,
  ...GARDENER_FRONT_DOORS,
  ...KUBIZONE_FRONT_DOORS,
  ...EXTERNALDNS_FRONT_DOORS,
  ...DATUM_FRONT_DOORS,
];

export * from './front-door.ts';
export * from './validate.ts';
