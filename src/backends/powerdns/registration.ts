import { BACKEND_SCHEMAS } from '../../api/index.ts';
import type { BackendRegistration } from '../registration.ts';
import { POWERDNS_CAPABILITIES, PowerDnsBackend } from './powerdns-backend.ts';

/**
 * `backend.powerdns`: one PowerDnsBackend per class and PowerDNS server. Its URL and server id name
 * the target (another one is another PowerDNS, so the zones move there); its other settings — key,
 * kind, TLS, intervals — are taken in place, so changing them never moves zones.
 */
export const powerDnsRegistration: BackendRegistration<'powerdns'> = {
  schema: BACKEND_SCHEMAS.powerdns,
  capabilities: POWERDNS_CAPABILITIES,
  target: (settings) => `${settings.url.replace(/\/+$/, '')}\u0000${settings.serverId ?? 'localhost'}`,
  create: (settings, context) =>
    new PowerDnsBackend({
      settings,
      secrets: context.secrets,
      ...(context.log ? { log: context.log } : {}),
      ...(context.probePermitted ? { probePermitted: context.probePermitted } : {}),
    }),
};
