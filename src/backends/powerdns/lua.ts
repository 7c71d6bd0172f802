/**
 * Steered record sets as PowerDNS LUA records (https://doc.powerdns.com/authoritative/lua-records/):
 * one LUA RRset per steered A/AAAA RRset, whose content is a whole Lua program (`;`-prefixed) that
 * asks PowerDNS's health checker for the healthy candidates with `ifurlup` (HTTP, HTTPS) or
 * `ifportup` (TCP) and `selector='all'`, then applies Zonekeeper's selection. Pure: no I/O.
 *
 * What PowerDNS cannot express is approximated and listed by `luaLimits` (docs/steering.md): failure
 * and success thresholds and the probe interval (PowerDNS's own settings decide), statuses other than
 * 200 (`ifurlup` counts only 200 as up), `whenAllDown` (with every candidate down PowerDNS returns
 * them all: `Ordered` answers the first, the others choose among all), the ECS scope (PowerDNS answers
 * the client's source prefix) and which record a client gets from `Hashed`/`Weighted` (`pickwhashed`
 * hashes modulo the healthy weights' sum, not by rendezvous).
 */
import type { Steering } from '../../api/steering.ts';

/** A Lua string literal in single quotes. */
function lit(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
}

function list(items: readonly string[]): string {
  return `{${items.map(lit).join(', ')}}`;
}

/** The health-check call returning the healthy candidates (all of them when none is), as a Lua expression. */
function healthyExpr(steering: Steering): string {
  const hc = steering.healthCheck;
  const candidates = list(steering.candidates);
  if (!hc) return candidates;
  const options = [`selector='all'`, `backupSelector='all'`, `timeout=${lit(String(hc.timeoutSeconds))}`];
  if (hc.protocol === 'TCP') return `ifportup(${hc.port}, ${candidates}, {${options.join(', ')}})`;
  const scheme = hc.protocol === 'HTTPS' ? 'https' : 'http';
  const defaultPort = hc.protocol === 'HTTPS' ? 443 : 80;
  const url = `${scheme}://${hc.host}${hc.port === defaultPort ? '' : `:${hc.port}`}${hc.path}`;
  if (hc.stringMatch !== undefined) options.push(`stringmatch=${lit(hc.stringMatch)}`);
  return `ifurlup(${lit(url)}, {${candidates}}, {${options.join(', ')}})`;
}

/**
 * The Lua program (without the leading `;`) of a steered RRset. Every policy starts from `up`, the
 * healthy candidates, and `c`, every candidate in order.
 */
export function luaProgram(steering: Steering): string {
  const lines = [`local c = ${list(steering.candidates)}`, `local up = ${healthyExpr(steering)}`];
  // `ok[address]`: whether a candidate is in the healthy list.
  lines.push('local ok = {}', 'for _, a in ipairs(up) do ok[a] = true end');
  lines.push('local h = {}', 'for _, a in ipairs(c) do if ok[a] then table.insert(h, a) end end');
  switch (steering.policy) {
    case 'All':
      lines.push('return h');
      break;
    case 'Ordered':
      lines.push('return h[1]');
      break;
    case 'Random':
      lines.push('return pickrandom(h)');
      break;
    case 'Hashed':
      lines.push(
        'local t = {}',
        'for _, a in ipairs(h) do table.insert(t, {1, a}) end',
        'return pickwhashed(t)',
      );
      break;
    case 'Weighted': {
      const weights = steering.candidates.map((a, i) => `[${lit(a)}] = ${steering.weights?.[i] ?? 0}`);
      lines.push(
        `local w = {${weights.join(', ')}}`,
        'local t = {}',
        'for _, a in ipairs(h) do if w[a] > 0 then table.insert(t, {w[a], a}) end end',
        'if #t == 0 then return h end',
        'return pickwhashed(t)',
      );
      break;
    }
    case 'Closest': {
      const regions = steering.candidates.map((a, i) => `[${lit(a)}] = ${lit(steering.regions?.[i] ?? '')}`);
      lines.push(
        `local r = {${regions.join(', ')}}`,
        'local function near(order)',
        '  for _, g in ipairs(order) do',
        '    local o = {}',
        '    for _, a in ipairs(h) do if r[a] == g then table.insert(o, a) end end',
        '    if #o > 0 then return o end',
        '  end',
        '  return h',
        'end',
      );
      // Longest network first, as the built-in server decides.
      const topology = [...(steering.topology ?? [])].sort(
        (a, b) => Number(b.network.split('/')[1]) - Number(a.network.split('/')[1]),
      );
      for (const t of topology)
        lines.push(`if netmask({${lit(t.network)}}) then return near(${list(t.regions)}) end`);
      lines.push('return h');
      break;
    }
  }
  return lines.join('\n');
}

/** The content of the LUA record for a steered RRset of `type` (A or AAAA), as the PowerDNS API takes it. */
export function luaContent(type: string, steering: Steering): string {
  const code = `;${luaProgram(steering)}`;
  return `${type} "${code.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** What of a steering PowerDNS LUA records do not express exactly (for logs and docs). */
export function luaLimits(steering: Steering): string[] {
  const out: string[] = [];
  const hc = steering.healthCheck;
  if (hc) {
    out.push('failureThreshold, successThreshold and intervalSeconds are decided by PowerDNS');
    if (hc.expectStatus.length > 0 && hc.expectStatus.join() !== '200')
      out.push('ifurlup counts only HTTP 200 as up');
  }
  // With every candidate down, ifurlup/ifportup return them all: Ordered answers the first, others choose among all.
  const allDown = steering.policy === 'Ordered' ? 'First' : 'All';
  if (steering.whenAllDown !== allDown)
    out.push(`whenAllDown ${steering.whenAllDown} is answered as ${allDown} when every candidate is down`);
  if (steering.geoip) out.push("the class's GeoIP database is not used: only topology networks decide");
  if (steering.policy === 'Closest' || steering.policy === 'Weighted' || steering.policy === 'Hashed')
    out.push(
      "PowerDNS answers with the client's source prefix as the ECS scope (edns-subnet-processing=yes)",
    );
  if (steering.policy === 'Weighted' || steering.policy === 'Hashed')
    out.push(
      "pickwhashed hashes the client its own way, modulo the healthy records' weights: clients of records still up can move when one goes down",
    );
  return out;
}

/**
 * The candidates of a health-checked steered RRset that PowerDNS must not probe (`permitted` says
 * no: loopback, link-local, metadata addresses not allow-listed), in order; empty when it may probe
 * them all. PowerDNS's health checker runs where PowerDNS runs, so the same guard as Zonekeeper's own
 * probes applies before a LUA record asks it to.
 */
export function luaDeniedCandidates(steering: Steering, permitted: (address: string) => boolean): string[] {
  if (!steering.healthCheck) return [];
  return steering.candidates.filter((address) => !permitted(address));
}
