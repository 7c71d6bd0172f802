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
