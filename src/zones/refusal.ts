import type { Name } from '../dns/name.ts';
import type { ResourceKey } from './resource-key.ts';

/**
 * A refusal as data: which rule refused (a stable code), and its message as parts, where every part
 * that names a namespace or an object of one says so. The text is rendered for its reader:
 *
 * - the owner of the refused object (its status, the log): everything, as written;
 * - a caller writing as a namespace (a credential of the record writer: the homelab API, the
 *   ExternalDNS webhook, an RFC 2136 UPDATE key): objects of other namespaces become "a DNSZone of
 *   another namespace" or drop out where they were an aside, other namespaces become "another
 *   namespace", and what another object's status says is left out. DNS names (the zone's, the
 *   record's) and what to do stay.
 *
 * Nothing is rewritten after the fact: a part that names something carries both of its texts.
 */

/** An object of the API a refusal names. */
export interface ObjectRef {
  readonly kind: 'DNSZone' | 'DNSRecordSet';
  readonly namespace: string;
  readonly name: string;
}

/** A part whose text depends on whether its reader belongs to `namespace`. */
export interface Scoped {
  readonly namespace: string;
  /** For the owner, and for a caller of `namespace`. */
  readonly own: string;
  /** For a caller of any other namespace. */
  readonly other: string;
  /** The object the part names, if it names one. */
  readonly object?: ObjectRef;
}

/** A part only the owner reads: text of another object's status, which may name anything. */
export interface OwnerOnly {
  readonly ownerOnly: string;
}

/** Plain text (DNS names, field paths, what to do), or a part that names something. */
export type Part = string | Scoped | OwnerOnly;

/** A caller writing as a namespace; without one, the owner reads. */
export interface Audience {
  readonly namespace: string;
}

export class Refusal<Code extends string = string> {
  /** Which rule refused: one code per form of message. */
  readonly code: Code;
  readonly parts: readonly Part[];
  /** The DNS name of the zone the refusal is about, when there is one: every reader may read it. */
  readonly origin: Name | undefined;

  constructor(code: Code, parts: readonly Part[], origin?: Name) {
    this.code = code;
    this.parts = parts;
    this.origin = origin;
  }

  /** The message: everything for the owner; for a caller, nothing of another namespace. */
  text(caller?: Audience): string {
    let out = '';
    for (const part of this.parts) {
      if (typeof part === 'string') out += part;
      else if ('ownerOnly' in part) out += caller === undefined ? part.ownerOnly : '';
      else out += caller === undefined || caller.namespace === part.namespace ? part.own : part.other;
    }
    return out;
  }

  /** The objects the message names, in order. */
  get subjects(): ObjectRef[] {
    return this.parts.flatMap((p) => (typeof p !== 'string' && 'object' in p && p.object ? [p.object] : []));
  }
}

function refOf(kind: ObjectRef['kind'], key: ResourceKey): ObjectRef {
  const slash = key.indexOf('/');
  return slash < 0
    ? { kind, namespace: '', name: key }
    : { kind, namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** `DNSZone ns/name`; for a caller of another namespace "a DNSZone of another namespace". */
export function object(kind: ObjectRef['kind'], key: ResourceKey): Scoped {
  const ref = refOf(kind, key);
  return {
    namespace: ref.namespace,
    own: `${kind} ${key}`,
    other: `a ${kind} of another namespace`,
    object: ref,
  };
}

/** ` (DNSZone ns/name)` beside the DNS name it explains; left out for a caller of another namespace. */
export function aside(kind: ObjectRef['kind'], key: ResourceKey): Scoped {
  const ref = refOf(kind, key);
  return { namespace: ref.namespace, own: ` (${kind} ${key})`, other: '', object: ref };
}

/** `namespace ns`; for a caller of another namespace "another namespace". */
export function namespaceOf(namespace: string): Scoped {
  return { namespace, own: `namespace ${namespace}`, other: 'another namespace' };
}

/** Text that names `namespace` or something of it: `other` for a caller of another namespace. */
export function scoped(namespace: string, own: string, other: string): Scoped {
  return { namespace, own, other };
}

/** Text only the owner reads. */
export function ownerOnly(text: string): OwnerOnly {
  return { ownerOnly: text };
}
