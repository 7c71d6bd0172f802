/**
 * Gateway API objects (gateway.networking.k8s.io/v1 GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute) read from the API
 * server with one reflector per kind, for the Gateway DNS controller, and its writes: DNSRecordSets
 * (created or replaced, deleted), annotations on Gateways and routes, Events about them.
 */
import type { DNSRecordSet } from '../../api/index.ts';
import {
  GATEWAY_GROUP,
  type GatewayKind,
  type GatewayObject,
  type GatewaySource,
  type GatewayWriter,
} from '../../control/gateway-controller.ts';
import type { EventRecorder } from './events.ts';
import { type ApiResource, isStatus, type KubeApi } from './kube-api.ts';
import { type KubeObject, Reflector } from './reflector.ts';

const PLURALS: Record<GatewayKind, string> = {
  GatewayClass: 'gatewayclasses',
  Gateway: 'gateways',
  HTTPRoute: 'httproutes',
  GRPCRoute: 'grpcroutes',
  TLSRoute: 'tlsroutes',
};

function resource(kind: GatewayKind): ApiResource {
  return { group: GATEWAY_GROUP, version: 'v1', plural: PLURALS[kind], kind };
}

function keyOf(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

export class KubernetesGatewaySource implements GatewaySource {
  private readonly cache = new Map<GatewayKind, Map<string, GatewayObject>>();
  private readonly handlers = new Set<() => void>();
  private readonly reflectors: Reflector[];

  constructor(
    api: Pick<KubeApi, 'listerWatcher'>,
    kinds: readonly GatewayKind[],
    log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void,
  ) {
    this.reflectors = kinds.map((kind) => {
      this.cache.set(kind, new Map());
      return new Reflector({
        name: PLURALS[kind],
        listerWatcher: api.listerWatcher(resource(kind)),
        onReplace: (items) => {
          const map = new Map<string, GatewayObject>();
          for (const o of items) map.set(keyOf(o), o as unknown as GatewayObject);
          this.cache.set(kind, map);
          this.changed();
        },
        onEvent: (type, object) => {
          const map = this.cache.get(kind)!;
          if (type === 'DELETED') map.delete(keyOf(object));
          else map.set(keyOf(object), object as unknown as GatewayObject);
          this.changed();
        },
        ...(log ? { log } : {}),
      });
    });
  }

  start(): void {
    for (const r of this.reflectors) r.start();
  }

  /** Resolves once every kind was listed (nothing is deleted for want of an object not read yet). */
  async synced(): Promise<void> {
    await Promise.all(this.reflectors.map((r) => r.synced));
  }

  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((r) => r.stop()));
  }

  list(kind: GatewayKind): GatewayObject[] {
    return [...(this.cache.get(kind)?.values() ?? [])];
  }

  watch(handler: () => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  private changed(): void {
    for (const h of this.handlers) h();
  }
}

/** Writes through the API server as the operator. */
export function kubernetesGatewayWriter(api: KubeApi, events: EventRecorder): GatewayWriter {
  return {
    async apply(recordSet: DNSRecordSet, owner) {
      const ns = recordSet.metadata.namespace ?? 'default';
      const body = {
        ...recordSet,
        metadata: {
          ...recordSet.metadata,
          ...(owner
            ? {
                ownerReferences: [
                  { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid },
                ],
              }
            : {}),
        },
      };
      const current = await api.get('DNSRecordSet', ns, recordSet.metadata.name);
      if (!current) {
        await api.createObject('DNSRecordSet', ns, body);
        return;
      }
      const meta = current.metadata as { resourceVersion?: string; labels?: Record<string, string> };
      // Never take over an object someone else made at this name: the controller's plan reports it.
      if (
        meta.labels?.['app.kubernetes.io/managed-by'] !==
        recordSet.metadata.labels?.['app.kubernetes.io/managed-by']
      )
        return;
      await api.replaceObject('DNSRecordSet', ns, recordSet.metadata.name, {
        ...body,
        metadata: { ...body.metadata, resourceVersion: meta.resourceVersion },
      });
    },
    delete: (namespace, name) => api.deleteObject('DNSRecordSet', namespace, name),
    async annotate(kind, namespace, name, annotations) {
      try {
        await api.mergePatch(resource(kind), namespace, name, { metadata: { annotations } });
      } catch (e) {
        if (!isStatus(e, 404)) throw e;
      }
    },
    event(kind, object, reason, note) {
      events.record({
        regarding: {
          kind,
          apiVersion: `${GATEWAY_GROUP}/v1`,
          name: object.metadata.name,
          namespace: object.metadata.namespace,
          uid: object.metadata.uid,
        },
        type: 'Warning',
        reason,
        action: 'PublishHostname',
        note,
      });
    },
  };
}
