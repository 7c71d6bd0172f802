/** The Zonekeeper API (dns.zonekeeper.dev/v1alpha1): types, validation and CRDs from one definition per kind. */

export type { BuiltinSettings } from './backends/builtin.ts';
export type { BackendKind, BackendSchemaOf, BackendSettings } from './backends/index.ts';
export { BACKEND_KINDS, BACKEND_SCHEMAS, backendOf, isBackendKind } from './backends/index.ts';
export type { PowerDnsSettings } from './backends/powerdns.ts';
export type { Rfc2136Settings } from './backends/rfc2136.ts';
export type { ChangeSafety, EffectiveChangeSafety } from './change-safety.ts';
export {
  CHANGE_SAFETY_MIN_RRSETS,
  CONFIRM_CHANGE_ANNOTATION,
  changeSafetySchema,
  DEFAULT_MAX_DELETE_PERCENT,
  DEFAULT_MAX_UPDATE_PERCENT,
  effectiveChangeSafety,
} from './change-safety.ts';
export { crdFileName, crdsYaml, crdYaml, generateCrds } from './crds.ts';
export type { DNSRecordSet, DNSRecordSetSpec, DNSRecordSetStatus } from './dnsrecordset.ts';
export {
  dnsRecordSetDefinition,
  dnsRecordSetSpecSchema,
  dnsRecordSetStatusSchema,
  MAX_RECORD_LENGTH,
  MAX_RECORDS,
} from './dnsrecordset.ts';
export type { Dnssec, DnssecAlgorithmSetting, DnssecStatus, EffectiveDnssec } from './dnssec.ts';
export {
  DNSSEC_ALGORITHM_NAMES,
  disablingDnssec,
  effectiveDnssec,
  PARENT_DS_ANNOTATION,
  signingId,
  stillDisabling,
  withParentDs,
} from './dnssec.ts';
export type { Delegation, DNSZone, DNSZoneSpec, DNSZoneStatus, IgnoreRule } from './dnszone.ts';
export {
  delegationSchema,
  dnsZoneDefinition,
  dnsZoneSpecSchema,
  dnsZoneStatusSchema,
  ignoreRuleSchema,
  MAX_DELEGATION_NAMES,
  MAX_DELEGATIONS,
  MAX_IGNORE_RULES,
} from './dnszone.ts';
export type { DNSZoneClass, DNSZoneClassSpec, DNSZoneClassStatus } from './dnszoneclass.ts';
export {
  dnsZoneClassDefinition,
  dnsZoneClassSpecSchema,
  dnsZoneClassStatusSchema,
} from './dnszoneclass.ts';
export type { Domain, DomainSpec, DomainStatus } from './domain.ts';
export { DomainCondition, domainDefinition, domainSpecSchema, domainStatusSchema } from './domain.ts';
export type { KindDefinition, PrinterColumn } from './kind.ts';
export type {
  Condition,
  ConditionTypeName,
  ObjectMeta,
  ObjectRef,
  ReasonName,
  SOAOverrides,
} from './meta.ts';
export { API_VERSION, ConditionType, GROUP, MAX_TTL, Reason, VERSION } from './meta.ts';
export type { Kind, Resource, ResourceOfKind, ValidateOptions, ValidationResult } from './resource.ts';
export {
  DEFAULT_NAMESPACE,
  isKind,
  isNamespaced,
  KIND_DEFINITIONS,
  KINDS,
  validateResource,
} from './resource.ts';
export type { Infer, Problem, Rule, Schema } from './schema.ts';
export { formatProblem, normalizeValue, s, toOpenApi, validateValue } from './schema.ts';
