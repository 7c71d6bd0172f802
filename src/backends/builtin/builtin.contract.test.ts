/** The built-in backend (one process's zone table) against the backend contract kit. */
import { ZoneTable } from '../../server/zone-table.ts';
import { heldFromRRsets } from '../contract/held.ts';
import { backendContract, rrset } from '../contract/kit.ts';
import { BuiltinBackend } from './builtin-backend.ts';

const table = new ZoneTable();

backendContract('builtin', {
  // As `zonekeeper serve` without an ALIAS resolver: ALIAS targets outside the zones are reported.
  start: async () => new BuiltinBackend(table, undefined, { aliasCheck: { recheck: () => {} } }),
  stop: async () => {},
  read: async (origin) => {
    const zone = table.get(origin);
    return zone && heldFromRRsets(zone.serial, zone.rrsets());
  },
  drift: { notApplicable: 'the served table lives in this process and only the backend writes it' },
  handMade: {
    notApplicable: 'the built-in server holds only Zonekeeper content: there is nothing to ignore',
  },
  refuse: async (origin) => ({
    rrset: rrset(origin, 'cdn', 'ALIAS', ['cdn.elsewhere.example.']),
    reason: 'AliasTargetUnresolvable',
  }),
  outage: { notApplicable: 'the table is in this process: it cannot be unreachable' },
});
