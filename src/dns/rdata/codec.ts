/** The contract every per-type RDATA codec implements. */
import type { Name } from '../name.ts';
import type { WireReader, WireWriter } from '../wire.ts';
import type { RdataFields } from './fields.ts';
import type { Rdata } from './types.ts';

export interface RdataCodec<R extends Rdata> {
  /** Presentation syntax shown in error messages, e.g. "<preference> <exchange>". */
  readonly syntax: string;
  /** Strictly parses presentation fields; names are resolved against `origin`. */
  parse(fields: RdataFields, origin: Name, type: R['type']): R;
  /** Canonical presentation text. */
  print(rdata: R): string;
  /** Writes the RDATA (without RDLENGTH). */
  encode(rdata: R, w: WireWriter): void;
  /** Reads the RDATA; `r` is bounded so that reading past `end` throws. */
  decode(r: WireReader, end: number, type: R['type']): R;
}
