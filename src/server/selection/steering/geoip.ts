/**
 * The regions of a client network from a MaxMind-format GeoIP database (read with `mmdb-lib`): its
 * country (`country.iso_code`), else its continent (`continent.code`), mapped to regions by the class's
 * `geoip` settings. The file is read once per binding, when a DNS process prepares it, never per query;
 * a lookup is a walk of the database's search tree.
 */
import { readFileSync } from 'node:fs';
import { type CountryResponse, Reader } from 'mmdb-lib';
import type { GeoIp } from '../../../api/steering.ts';
import { type ClientNetwork, SelectionError } from '../policy.ts';

/** What is read of a record: country and continent codes (GeoIP2/GeoLite2 Country and City have them). */
type GeoRecord = CountryResponse;

export interface GeoRegions {
  /** The regions for a client network and the prefix length of the database network that decided. */
  lookup(network: ClientNetwork): { regions: string[]; scope: number } | undefined;
}

/** Databases by path, shared by the bindings of a process (a new file needs a new path or a restart). */
const readers = new Map<string, Reader<GeoRecord>>();

export function openGeoRegions(settings: GeoIp): GeoRegions {
  let reader = readers.get(settings.databaseFile);
  if (!reader) {
    try {
      reader = new Reader<GeoRecord>(readFileSync(settings.databaseFile));
    } catch (e) {
      throw new SelectionError(
        'STEERING_GEOIP',
        `the GeoIP database ${settings.databaseFile} cannot be read (${(e as Error).message}); give the path of a MaxMind DB file present on every server`,
      );
    }
    readers.set(settings.databaseFile, reader);
  }
  const db = reader;
  return {
    lookup(network) {
      const [record, prefix] = db.getWithPrefixLength(addressText(network));
      const country = record?.country?.iso_code ?? record?.registered_country?.iso_code;
      const continent = record?.continent?.code;
      const regions =
        (country !== undefined ? settings.countries?.[country] : undefined) ??
        (continent !== undefined ? settings.continents?.[continent] : undefined);
      return regions ? { regions, scope: prefix } : undefined;
    },
  };
}

function addressText(network: ClientNetwork): string {
  const a = network.address;
  if (network.family === 1) return `${a[0]}.${a[1]}.${a[2]}.${a[3]}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((a[i]! << 8) | a[i + 1]!).toString(16));
  return groups.join(':');
}
