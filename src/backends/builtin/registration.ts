import { BACKEND_SCHEMAS } from '../../api/index.ts';
import type { BackendRegistration } from '../registration.ts';
import { BUILTIN_CAPABILITIES } from './builtin-backend.ts';

/**
 * `backend.builtin`: every builtin class shares the process's own server (`zonekeeper serve`'s table
 * and DNS workers; the operator's in-process table, served by `zonekeeper server` replicas).
 */
export const builtinRegistration: BackendRegistration<'builtin'> = {
  schema: BACKEND_SCHEMAS.builtin,
  capabilities: BUILTIN_CAPABILITIES,
  target: () => 'builtin',
  create: (_settings, context) => context.builtin,
};
