/** Settings of the built-in backend: none. Pure schema; the adapter is src/backends/builtin. */
import { type Infer, s } from '../schema.ts';

export const builtinBackendSchema = s.object(
  {},
  {
    description:
      "Zonekeeper's own authoritative DNS server (`zonekeeper serve` or `zonekeeper server`). Takes no settings: set it to {}.",
  },
);

export type BuiltinSettings = Infer<typeof builtinBackendSchema>;
