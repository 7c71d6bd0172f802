/**
 * Change safety settings shared by DNSZoneClass and DNSZone (a zone's setting overrides its class's,
 * field by field): how large a change may be before it is held for confirmation.
 */
import { s } from './schema.ts';

/** Default share of a zone's RRsets an apply may delete (or change) before it is held, in percent. */
export const DEFAULT_MAX_DELETE_PERCENT = 30;
export const DEFAULT_MAX_UPDATE_PERCENT = 30;
/** Zones with fewer RRsets than this (before the change) are never held. */
export const CHANGE_SAFETY_MIN_RRSETS = 10;
/** The annotation on a DNSZone that releases a held change: its value is the change's hash. */
export const CONFIRM_CHANGE_ANNOTATION = 'dns.zonekeeper.dev/confirm-change';

const percent = (what: string) =>
  s.optional(
    s.integer({
      description: `Largest share of the zone's RRsets (in percent, 0-100) one change may ${what} before it is held for confirmation. Default: 30.`,
      minimum: 0,
      maximum: 100,
      format: 'int32',
    }),
  );

export const changeSafetySchema = s.object(
  {
    enabled: s.optional(
      s.boolean({
        description:
          'Whether large changes are held (default true). Only false opts out: every change then applies at once.',
      }),
    ),
    maxDeletePercent: percent('delete'),
    maxUpdatePercent: percent('change'),
  },
  {
    description:
      'Holds on large changes: a change that would delete or change more than the given share of a zone of at ' +
      'least 10 RRsets (the SOA not counted), measured against the last content that stayed unchanged for 10 ' +
      'seconds, is not applied; the zone keeps serving its previous content with Programmed=False, reason ' +
      `ChangeHeld, until the change is confirmed with the annotation ${CONFIRM_CHANGE_ANNOTATION}: <hash>.`,
  },
);

export interface ChangeSafety {
  enabled?: boolean;
  maxDeletePercent?: number;
  maxUpdatePercent?: number;
}

/** The effective settings of a zone: the zone's fields over its class's over the defaults. */
export interface EffectiveChangeSafety {
  enabled: boolean;
  maxDeletePercent: number;
  maxUpdatePercent: number;
}

export function effectiveChangeSafety(
  zoneClass: ChangeSafety | undefined,
  zone: ChangeSafety | undefined,
): EffectiveChangeSafety {
  return {
    enabled: zone?.enabled ?? zoneClass?.enabled ?? true,
    maxDeletePercent: zone?.maxDeletePercent ?? zoneClass?.maxDeletePercent ?? DEFAULT_MAX_DELETE_PERCENT,
    maxUpdatePercent: zone?.maxUpdatePercent ?? zoneClass?.maxUpdatePercent ?? DEFAULT_MAX_UPDATE_PERCENT,
  };
}
