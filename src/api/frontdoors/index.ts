/**
 * The front doors Zonekeeper ships: each is one folder under `src/api/frontdoors/<name>/` and one line
 * here. None is registered yet; `--front-door MODULE` loads one from a module (development and tests).
 */
import type { FrontDoor } from './front-door.ts';

export const REGISTERED_FRONT_DOORS: readonly FrontDoor[] = [];

export * from './front-door.ts';
export * from './validate.ts';
