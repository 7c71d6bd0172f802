/**
 * Starts the homelab DNS API the same way in `serve`, `operator` and `server`: its callers (the
 * webhook-hmac credentials, secrets read by reference and re-read every minute) and the HTTP endpoint
 * writing through the process's record writer.
 */
import type { SecretResolver } from '../../api/secret-ref.ts';
import type { WriteCredential } from '../../writes/credentials.ts';
import { type HomelabApiSettings, HomelabCallers } from './callers.ts';
import { HomelabApi, type HomelabApiOptions } from './homelab-api.ts';

export interface StartHomelabApiOptions
  extends Pick<HomelabApiOptions, 'writer' | 'noWriter' | 'recordSet' | 'registry' | 'log'> {
  settings: HomelabApiSettings;
  credentials: readonly WriteCredential[];
  secrets: SecretResolver;
}

export interface StartedHomelabApi {
  api: HomelabApi;
  /** Stops re-reading the callers' secrets and closes the endpoint. */
  stop(): Promise<void>;
}

export async function startHomelabApi(options: StartHomelabApiOptions): Promise<StartedHomelabApi> {
  const callers = await HomelabCallers.open(options.credentials, options.secrets, options.log);
  const api = new HomelabApi({
    listen: options.settings.listen,
    callers: () => callers.all(),
    writer: options.writer,
    ...(options.noWriter !== undefined ? { noWriter: options.noWriter } : {}),
    recordSet: options.recordSet,
    ...(options.settings.maxNoncesPerCaller !== undefined
      ? { maxNoncesPerCaller: options.settings.maxNoncesPerCaller }
      : {}),
    ...(options.settings.connectionLimits ? { connectionLimits: options.settings.connectionLimits } : {}),
    ...(options.registry ? { registry: options.registry } : {}),
    log: options.log,
  });
  try {
    await api.start();
  } catch (e) {
    callers.stop();
    throw e;
  }
  return {
    api,
    async stop() {
      callers.stop();
      await api.stop();
    },
  };
}
