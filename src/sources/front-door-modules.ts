/**
 * Front doors loaded from modules (`--front-door MODULE`): for developing a front door before it is
 * registered in `src/api/frontdoors/index.ts`, and for tests. A module exports `frontDoor` (one) or
 * `frontDoors` (several). Loaded once per process; the manifest parse worker loads the same modules.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type FrontDoor, FrontDoors, REGISTERED_FRONT_DOORS } from '../api/frontdoors/index.ts';

/** The registered front doors plus those of `modules` (paths or file URLs). */
export async function loadFrontDoors(modules: readonly string[] = []): Promise<FrontDoors> {
  const doors: FrontDoor[] = [...REGISTERED_FRONT_DOORS];
  for (const module of modules) {
    const url = module.startsWith('file:') ? module : pathToFileURL(path.resolve(module)).href;
    let loaded: { frontDoor?: FrontDoor; frontDoors?: readonly FrontDoor[] };
    try {
      loaded = (await import(url)) as typeof loaded;
    } catch (e) {
      throw new Error(
        `--front-door ${module}: cannot load it: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    const found = [...(loaded.frontDoor ? [loaded.frontDoor] : []), ...(loaded.frontDoors ?? [])];
    if (found.length === 0)
      throw new Error(`--front-door ${module}: the module exports neither frontDoor nor frontDoors`);
    doors.push(...found);
  }
  return new FrontDoors(doors);
}
