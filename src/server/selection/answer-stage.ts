import type { Name } from '../../dns/name.ts';
import { RRType } from '../../dns/rrtype.ts';
import type { Query } from '../query.ts';
import type { ResponseParts } from '../response.ts';
import type { ZoneDnssecView } from '../zone-dnssec.ts';
import type { ServedRRset } from '../zone-snapshot.ts';
import type { SelectionTable } from './selection-table.ts';

/**
 * The answer stage of RRset selection, run on a response's parts once the zones have answered
 * (RFC 1034 §4.3.2) and only while the process holds bindings (`selections.size > 0`):
 *
 * - RRsets of the answer section that are bound to a policy are replaced by the records it chose for
 *   this query. The additional section is left whole (RFC 7871 §7.4: addresses there should not be
 *   tailored), and so are referrals and negative answers, which carry no answer RRsets.
 * - A response that went through a selection is marked `selected`: it is made for this client and
 *   the response cache does not keep it.
 * - A query with Client Subnet gets the option back (RFC 7871 §12.1: a server that uses ECS answers
 *   every ECS query with it) with the query's family, source prefix and address and the longest scope
 *   a selection reported (RFC 7871 §7.2.1), 0 when the answer holds for any client.
 * - When the RRset tailored to the subnet comes after a CNAME, only the initial CNAME is answered
 *   (RFC 7871 §7.2.1), so the chain is not cached for the subnet alone; its scope is then 0.
 * - A policy that leaves its RRset out (`'none'`) and so empties the answer section, or leaves only the
 *   CNAME chain that led to it, makes the response a NODATA for the last name: the negative SOA of the
 *   zone of the RRset left out in the authority section (RFC 2308 §2.2), nothing additional.
 * - A signed answer (DO set; `signed` gives a binding's zone's DNSSEC view) carries each chosen subset
 *   of a signed zone with an RRSIG over the subset (`SelectionTable.select`).
 */
export function selectParts(
  selections: SelectionTable,
  parts: ResponseParts,
  query: Query,
  client: string | undefined,
  negativeSoa?: (zone: Name) => ServedRRset | undefined,
  signed?: (zone: Name) => ZoneDnssecView | undefined,
): ResponseParts {
  const subnet = query.edns?.clientSubnet;
  const picked =
    parts.answer.length === 0
      ? undefined
      : selections.select(
          parts.answer,
          {
            qname: query.qname,
            qtype: query.qtype,
            client,
            clientSubnet: subnet,
          },
          signed,
        );
  if (picked === undefined) {
    return subnet === undefined ? parts : { ...parts, clientSubnet: { ...subnet, scopePrefix: 0 } };
  }
  let answer = picked.answer;
  let additional = parts.additional;
  let authority = parts.authority;
  let scope = picked.scope;
  // Emptied, or a CNAME chain whose target RRset was left out: a NODATA for the last name.
  if (
    picked.removedFrom !== undefined &&
    (answer.length === 0 || answer[answer.length - 1]!.type === RRType.CNAME)
  ) {
    const soa = negativeSoa?.(picked.removedFrom);
    authority = soa ? [soa] : [];
    additional = [];
  }
  if (scope > 0 && picked.firstScoped > 0 && answer.length > 0 && answer[0]!.type === RRType.CNAME) {
    answer = [answer[0]!];
    additional = [];
    scope = 0;
  }
  return {
    ...parts,
    answer,
    authority,
    additional,
    selected: true,
    ...(subnet === undefined ? {} : { clientSubnet: { ...subnet, scopePrefix: scope } }),
  };
}
