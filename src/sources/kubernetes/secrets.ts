import { SecretError, type SecretRef, type SecretResolver } from '../../api/secret-ref.ts';
import { fileAndEnvSecrets } from '../../control/secrets.ts';
import { isStatus, type KubeApi } from './kube-api.ts';

/**
 * The operator's secrets: a Kubernetes Secret key is read by reference when it is needed (one GET of
 * that Secret; Secrets are never listed or watched, so RBAC can name just the ones used), and files
 * and environment variables work as in folder mode (mounted Secrets). A Secret without a namespace is
 * looked up in the referring object's namespace, else in the operator's own.
 */
export function kubernetesSecrets(
  api: Pick<KubeApi, 'readSecretKey'>,
  defaultNamespace: string,
): SecretResolver {
  const local = fileAndEnvSecrets();
  return async (ref: SecretRef, namespace?: string) => {
    if (ref.name === undefined || ref.key === undefined) return local(ref, namespace);
    const ns = ref.namespace ?? namespace ?? defaultNamespace;
    let value: string | undefined;
    try {
      value = await api.readSecretKey(ns, ref.name, ref.key);
    } catch (e) {
      if (isStatus(e, 404)) throw new SecretError('SECRET_NOT_FOUND', `secret ${ns}/${ref.name} not found`);
      if (isStatus(e, 403))
        throw new SecretError(
          'SECRET_FORBIDDEN',
          `the operator may not read secret ${ns}/${ref.name}; grant it get on that Secret (see docs/kubernetes.md)`,
        );
      throw e;
    }
    if (value === undefined || value.trim() === '')
      throw new SecretError('SECRET_KEY_MISSING', `secret ${ns}/${ref.name} has no key ${ref.key}`);
    return value.trim();
  };
}
