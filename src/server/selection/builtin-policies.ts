import type { SelectionPolicy } from './policy.ts';

/**
 * The selection policies every DNS process knows, one folder per policy under `selection/` (e.g.
 * `selection/health/`), listed here so that the primary and every DNS worker process register the
 * same ones. None yet: answer steering adds its policies here.
 */
export const BUILTIN_SELECTION_POLICIES: readonly SelectionPolicy[] = [];
