import { readFile } from 'node:fs/promises';
import { SecretError, type SecretResolver } from '../api/secret-ref.ts';

/**
 * Folder mode: secrets from files and environment variables. A Kubernetes Secret reference is refused
 * with a clear error (there is no cluster to read it from); the operator plugs in its own resolver.
 */
export function fileAndEnvSecrets(env: NodeJS.ProcessEnv = process.env): SecretResolver {
  return async (ref) => {
    if (ref.file !== undefined) {
      try {
        return (await readFile(ref.file, 'utf8')).trim();
      } catch (e) {
        throw new SecretError('SECRET_FILE_UNREADABLE', `secret file ${ref.file}: ${(e as Error).message}`);
      }
    }
    if (ref.env !== undefined) {
      const value = env[ref.env];
      if (value === undefined || value === '') {
        throw new SecretError(
          'SECRET_ENV_UNSET',
          `environment variable ${ref.env} (secretRef.env) is not set`,
        );
      }
      return value.trim();
    }
    throw new SecretError(
      'SECRET_NEEDS_CLUSTER',
      `secret ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} key ${ref.key} is a Kubernetes Secret; in folder mode use secretRef.file or secretRef.env`,
    );
  };
}
