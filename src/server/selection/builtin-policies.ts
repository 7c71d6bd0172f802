import type { SelectionPolicy } from './policy.ts';
import { steeringPolicies } from './steering/policies.ts';

/**
 * The selection policies every DNS process knows, one folder per family under `selection/`, listed
 * here so that the primary and every DNS thread register the same ones: the steering
 * policies (`selection/steering/`: all, ordered, weighted, closest, random, hashed).
 */
export const BUILTIN_SELECTION_POLICIES: readonly SelectionPolicy[] = steeringPolicies();
