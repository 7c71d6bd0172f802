/** SVCB and HTTPS RDATA (RFC 9460 §2). */
import { DnsError } from '../errors.ts';
import { WireError } from '../wire.ts';
import type { RdataCodec } from './codec.ts';
import {
  INVALID_SVC_PARAM_KEY,
  parseSvcParamValue,
  printSvcParam,
  SvcParamKey,
  svcParamKeyCode,
  svcParamKeyName,
  svcParamWireProblem,
} from './svc-params.ts';
import type { SvcbRdata, SvcParam } from './types.ts';

function byKey(a: SvcParam, b: SvcParam): number {
  return a.key - b.key;
}

function isSorted(params: readonly SvcParam[]): boolean {
  for (let i = 1; i < params.length; i++) if (params[i - 1]!.key >= params[i]!.key) return false;
  return true;
}

export const svcbCodec: RdataCodec<SvcbRdata> = {
  syntax: '<priority> <target name> [key=value ...], e.g. 1 . alpn=h2,h3 port=443',
  parse(f, origin, type) {
    f.expectAtLeast(2);
    const priority = f.u16('priority');
    const target = f.name('target', origin);
    const params: SvcParam[] = [];
    for (const token of f.rest()) {
      const text = token.text;
      if (token.quoted) {
        throw f.invalid(
          'param',
          text,
          'write parameters as key=value or key="value", without quoting the key',
        );
      }
      const eq = text.indexOf('=');
      const keyText = eq < 0 ? text : text.slice(0, eq);
      const key = svcParamKeyCode(keyText);
      if (key === undefined) {
        throw f.invalid(
          'param',
          text,
          'unknown SvcParamKey; use mandatory, alpn, no-default-alpn, port, ipv4hint, ech, ipv6hint, dohpath, ohttp or keyNNNNN (RFC 9460 §2.1)',
        );
      }
      if (key === INVALID_SVC_PARAM_KEY) {
        throw f.invalid('param', text, 'key65535 is reserved as the "invalid key" (RFC 9460 §14.3.2)');
      }
      // RFC 9460 §2.2: SvcParamKeys must not repeat.
      if (params.some((p) => p.key === key)) {
        throw f.invalid(
          'param',
          text,
          `key ${svcParamKeyName(key)} appears more than once; give each key once`,
        );
      }
      let value: Uint8Array;
      try {
        value = parseSvcParamValue(key, eq < 0 ? undefined : text.slice(eq + 1));
      } catch (e) {
        if (e instanceof DnsError) throw f.invalid('param', text, e.message, e);
        throw e;
      }
      params.push({ key, value });
    }
    params.sort(byKey); // RFC 9460 §2.2: wire order is strictly increasing
    // RFC 9460 §2.4.2: AliasMode records carry no SvcParams.
    if (priority === 0 && params.length > 0) {
      throw f.invalid(
        'params',
        f.text,
        `priority 0 is AliasMode, which takes no parameters (RFC 9460 §2.4.2); use priority 1 or higher for ServiceMode, or drop the parameters`,
      );
    }
    const present = new Set(params.map((p) => p.key));
    const mandatory = params.find((p) => p.key === SvcParamKey.MANDATORY);
    if (mandatory !== undefined) {
      for (let i = 0; i < mandatory.value.length; i += 2) {
        const k = (mandatory.value[i]! << 8) | mandatory.value[i + 1]!;
        // RFC 9460 §8: every key listed in mandatory must be present.
        if (!present.has(k)) {
          throw f.invalid(
            'mandatory',
            f.text,
            `it lists ${svcParamKeyName(k)}, which is not present; add ${svcParamKeyName(k)}=... or remove it from mandatory (RFC 9460 §8)`,
          );
        }
      }
    }
    // RFC 9460 §7.1.1: no-default-alpn requires alpn.
    if (present.has(SvcParamKey.NO_DEFAULT_ALPN) && !present.has(SvcParamKey.ALPN)) {
      throw f.invalid(
        'no-default-alpn',
        f.text,
        'no-default-alpn requires an alpn parameter too (RFC 9460 §7.1.1)',
      );
    }
    return { type, priority, target, params };
  },
  print(r) {
    let s = `${r.priority} ${r.target}`;
    const params = isSorted(r.params) ? r.params : [...r.params].sort(byKey);
    for (const p of params) s += ' ' + printSvcParam(p);
    return s;
  },
  encode(r, w) {
    w.u16(r.priority);
    w.name(r.target, false); // RFC 9460 §2.2: TargetName is uncompressed
    const params = isSorted(r.params) ? r.params : [...r.params].sort(byKey);
    for (const p of params) {
      w.u16(p.key);
      w.u16(p.value.length);
      w.bytes(p.value);
    }
  },
  decode(r, end, type) {
    const priority = r.u16();
    const target = r.name();
    const params: SvcParam[] = [];
    let prev = -1;
    while (r.offset < end) {
      const key = r.u16();
      const length = r.u16();
      const value = new Uint8Array(r.bytes(length));
      // RFC 9460 §2.2: keys in strictly increasing order, otherwise the RR is malformed.
      if (key <= prev) {
        throw new WireError(
          'BAD_RDATA',
          `${type} SvcParamKey ${key} follows ${prev}; keys must be strictly increasing (RFC 9460 §2.2)`,
        );
      }
      const problem = svcParamWireProblem(key, value);
      if (problem !== undefined) throw new WireError('BAD_RDATA', `${type} ${problem}`);
      prev = key;
      params.push({ key, value });
    }
    return { type, priority, target, params };
  },
};
