import { BACKEND_SCHEMAS } from '../../api/index.ts';
import type { BackendRegistration } from '../registration.ts';
import { HOMELAB_WEBHOOK_CAPABILITIES, HomelabWebhookBackend } from './homelab-backend.ts';

/**
 * `backend.homelabWebhook`: one backend per class and provider URL. The URL names the target (another
 * URL is another provider, so the zones move there); the secret, timeout and resync are taken in place.
 */
export const homelabWebhookRegistration: BackendRegistration<'homelabWebhook'> = {
  schema: BACKEND_SCHEMAS.homelabWebhook,
  capabilities: HOMELAB_WEBHOOK_CAPABILITIES,
  target: (settings) => settings.url.replace(/\/+$/, ''),
  create: (settings, context) =>
    new HomelabWebhookBackend({
      settings,
      secrets: context.secrets,
      ...(context.log ? { log: context.log } : {}),
    }),
};
