/** Validation of front-door objects, and of any object: a native kind or a registered front door's. */

import { pushAll } from '../../util/push-all.ts';
import { API_VERSION } from '../meta.ts';
import {
  DEFAULT_NAMESPACE,
  type Resource,
  TOP_LEVEL_FIELDS,
  type ValidateOptions,
  validateMetadata,
  validateResource,
} from '../resource.ts';
import {
  capProblems,
  describeValue,
  isPlainObject,
  normalize,
  type Problem,
  quote,
  unknownFieldMessage,
  validateValue,
} from '../schema.ts';
import {
  apiVersionOf,
  type ForeignObject,
  type FrontDoor,
  type FrontDoors,
  frontDoorId,
} from './front-door.ts';

export type AnyValidationResult =
  | { ok: true; resource: Resource; door?: undefined }
  | { ok: true; foreign: ForeignObject; door: FrontDoor }
  | { ok: false; kind?: string; name?: string; problems: Problem[] };

/**
 * A front door's object checked as its API server would: schema (with its rules), metadata, then the
 * door's own admission rules. On success a clean copy, as `validateResource` gives for native kinds.
 */
export function validateForeign(
  door: FrontDoor,
  obj: Record<string, unknown>,
  old?: ForeignObject,
  options: ValidateOptions = {},
): { ok: true; foreign: ForeignObject } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = [];
  const apiVersion = apiVersionOf(door);
  if (obj.apiVersion !== apiVersion) {
    problems.push({
      path: 'apiVersion',
      code: 'API_VERSION',
      message: `must be ${apiVersion}, got ${typeof obj.apiVersion === 'string' ? quote(obj.apiVersion) : describeValue(obj.apiVersion)}; Zonekeeper reads ${door.kind} at ${apiVersion} only`,
    });
  }
  for (const key of Object.keys(obj)) {
    if (!TOP_LEVEL_FIELDS.includes(key))
      problems.push({
        path: key,
        code: 'UNKNOWN_FIELD',
        message: unknownFieldMessage(key, TOP_LEVEL_FIELDS),
      });
  }
  let metadata: ForeignObject['metadata'] | undefined;
  if (!isPlainObject(obj.metadata)) {
    problems.push({
      path: 'metadata',
      code: 'REQUIRED',
      message: 'required: a mapping with at least a name',
    });
  } else {
    const result = validateMetadata(obj.metadata, {
      kind: door.kind,
      namespaced: door.scope === 'Namespaced',
    });
    pushAll(problems, result.problems);
    metadata = result.metadata;
  }
  if (obj.spec === undefined || obj.spec === null)
    problems.push({ path: 'spec', code: 'REQUIRED', message: 'required field is missing' });
  else pushAll(problems, validateValue(door.spec, obj.spec, 'spec', old?.spec));
  const keepStatus = options.keepStatus === true && obj.status !== undefined && obj.status !== null;
  if (keepStatus) pushAll(problems, validateValue(door.status, obj.status, 'status'));
  if (problems.length > 0 || metadata === undefined) return { ok: false, problems: capProblems(problems) };
  if (door.scope === 'Namespaced' && metadata.namespace === undefined) metadata.namespace = DEFAULT_NAMESPACE;
  const foreign: ForeignObject = {
    apiVersion,
    kind: door.kind,
    metadata,
    spec: normalize(door.spec, obj.spec) as Record<string, unknown>,
    ...(keepStatus ? { status: normalize(door.status, obj.status) as Record<string, unknown> } : {}),
  };
  const admitted = door.admit?.(foreign, old) ?? [];
  if (admitted.length > 0) return { ok: false, problems: admitted };
  return { ok: true, foreign };
}

/**
 * An object of any kind Zonekeeper reads: a registered front door's (by apiVersion and kind) or a
 * native one. Unknown kinds get the native error, naming the front doors' kinds too.
 */
export function validateAny(
  obj: unknown,
  doors: FrontDoors,
  old?: Resource | ForeignObject,
  options: ValidateOptions = {},
): AnyValidationResult {
  // No door is of Zonekeeper's own group (`FrontDoors` refuses one): its objects skip the lookups.
  if (isPlainObject(obj) && doors.size > 0 && obj.apiVersion !== API_VERSION) {
    const door = doors.find(obj.apiVersion, obj.kind) ?? doors.findKind(obj.apiVersion, obj.kind);
    if (door) {
      const previous =
        old && old.kind === door.kind && old.apiVersion === apiVersionOf(door) ? old : undefined;
      const result = validateForeign(door, obj, previous as ForeignObject | undefined, options);
      if (result.ok) return { ok: true, foreign: result.foreign, door };
      const name = isPlainObject(obj.metadata) ? obj.metadata.name : undefined;
      return {
        ok: false,
        kind: door.kind,
        ...(typeof name === 'string' ? { name } : {}),
        problems: result.problems,
      };
    }
  }
  const result = validateResource(obj, old as Resource | undefined, options);
  if (result.ok || doors.size === 0) return result;
  // An unknown kind: say which front-door kinds exist as well.
  return {
    ...result,
    problems: result.problems.map((p) =>
      p.path === 'kind' && p.code === 'KIND'
        ? {
            ...p,
            message: `${p.message}, or a front door's kind: ${doors.all.map((d) => `${apiVersionOf(d)} ${d.kind}`).join(', ')}`,
          }
        : p,
    ),
  };
}

export { frontDoorId };
