import { BACKEND_SCHEMAS } from '../../api/index.ts';
import type { BackendRegistration } from '../registration.ts';
import { EXTERNALDNS_WEBHOOK_CAPABILITIES, ExternalDnsWebhookBackend } from './webhook-backend.ts';

/**
 * `backend.externalDNSWebhook`: one backend per class and provider URL. The URL names the target
 * (another URL is another provider, so the zones move there); timeout, owner ID, TXT registry naming
 * and resync are taken in place.
 */
export const externalDnsWebhookRegistration: BackendRegistration<'externalDNSWebhook'> = {
  schema: BACKEND_SCHEMAS.externalDNSWebhook,
  capabilities: EXTERNALDNS_WEBHOOK_CAPABILITIES,
  target: (settings) => settings.url.replace(/\/+$/, ''),
  create: (settings, context) =>
    new ExternalDnsWebhookBackend({ settings, ...(context.log ? { log: context.log } : {}) }),
};
