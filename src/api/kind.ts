/** What a resource kind is made of: its names, scope, spec and status schemas and printer columns. */
import type { ObjectSchema } from './schema.ts';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface KindDefinition<K extends string = string> {
  kind: K;
  plural: string;
  singular: string;
  listKind: string;
  shortNames: readonly string[];
  scope: 'Namespaced' | 'Cluster';
  description: string;
  spec: ObjectSchema;
  status: ObjectSchema;
  printerColumns: readonly PrinterColumn[];
  /**
   * Annotations of the generated CRD: a kind of a `*.k8s.io` group (a front door's) needs the API
   * review that approved its group, `api-approved.kubernetes.io`, or the API server refuses the CRD.
   */
  crdAnnotations?: Readonly<Record<string, string>>;
  /** Fields a field selector may name (`selectableFields` of the CRD, e.g. `.spec.domainName`). */
  selectableFields?: readonly { jsonPath: string }[];
}

export const READY_COLUMN: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: 'Whether the object is served as specified.',
};

export const AGE_COLUMN: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
};
