/**
 * Which published type at an owner name rules out `type` there: RFC 1034 §3.6.2 / RFC 2181 §10.1 — a
 * CNAME owner has no other data; and ALIAS answers A and AAAA queries itself, so it excludes them.
 * `here` maps the types already published at the name to who published them.
 */
export function exclusivityClash(
  type: string,
  here: ReadonlyMap<string, string>,
): { type: string; by: string; rule: string } | undefined {
  const cname = 'a CNAME owner has no other data, RFC 1034 §3.6.2';
  if (type === 'CNAME') {
    const first = here.entries().next();
    return first.done ? undefined : { type: first.value[0], by: first.value[1], rule: cname };
  }
  const existingCname = here.get('CNAME');
  if (existingCname) return { type: 'CNAME', by: existingCname, rule: cname };
  const alias = 'ALIAS answers A and AAAA queries itself';
  if (type === 'ALIAS') {
    for (const t of ['A', 'AAAA']) {
      const by = here.get(t);
      if (by) return { type: t, by, rule: alias };
    }
  }
  if (type === 'A' || type === 'AAAA') {
    const by = here.get('ALIAS');
    if (by) return { type: 'ALIAS', by, rule: alias };
  }
  return undefined;
}

/**
 * Why an RRset of `type` at `fqdn` is not published beside what `here` holds (type → who published
 * it, everything judged before it at the name: NS first, then oldest first): one writer per name and
 * type, the older (`one-writer`), or CNAME and ALIAS exclusivity (`exclusive`, `exclusivityClash`).
 * The rule `assembleZone` and the zone model judge record sets by, and the record writer's gate
 * judges writes by (`ZoneModel.writeConflict`).
 */
export function ownerConflict(
  fqdn: string,
  type: string,
  here: ReadonlyMap<string, string>,
): { rule: 'one-writer' | 'exclusive'; type: string; by: string; why?: string; message: string } | undefined {
  if (here.size === 0) return undefined;
  const existing = here.get(type);
  if (existing)
    return {
      rule: 'one-writer',
      type,
      by: existing,
      message: `${fqdn} ${type} is already published by ${existing}, which is older; delete one of the two`,
    };
  const clash = exclusivityClash(type, here);
  if (clash)
    return {
      rule: 'exclusive',
      type: clash.type,
      by: clash.by,
      why: clash.rule,
      message: `${fqdn} ${type} cannot coexist with the ${clash.type} published by ${clash.by} (${clash.rule})`,
    };
  return undefined;
}
