import { BACKEND_SCHEMAS } from '../../api/index.ts';
import type { BackendRegistration } from '../registration.ts';
import { DEFAULT_PORT, RFC2136_CAPABILITIES, Rfc2136Backend } from './rfc2136-backend.ts';

/**
 * `backend.rfc2136`: one Rfc2136Backend per class and server. The server's address and port name the
 * target (another one is another primary, so the zones move there); the keys and intervals are taken
 * in place, so changing them never moves zones.
 */
export const rfc2136Registration: BackendRegistration<'rfc2136'> = {
  schema: BACKEND_SCHEMAS.rfc2136,
  capabilities: RFC2136_CAPABILITIES,
  target: (settings) => `${settings.server.toLowerCase()}\u0000${settings.port ?? DEFAULT_PORT}`,
  create: (settings, context) =>
    new Rfc2136Backend({
      settings,
      secrets: context.secrets,
      ...(context.log ? { log: context.log } : {}),
    }),
};
