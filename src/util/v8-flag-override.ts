/**
 * The value of a V8 flag that Zonekeeper sets at run time for a while (`load-heap-growth.ts`,
 * `parse-young-generation.ts`): a default, another value or `off` from an environment variable,
 * and nothing when Node's own command line (or `NODE_OPTIONS`) names the flag, which then wins.
 */

/** Where the value comes from (defaults: this process's). */
export interface V8FlagSources {
  env?: NodeJS.ProcessEnv;
  /** Node's own command line (default `process.execArgv`). */
  execArgv?: readonly string[];
}

/** The value to set, or why none is set. */
export type V8FlagValue =
  | { readonly value: number; readonly skipped?: undefined }
  | { readonly value: undefined; readonly skipped: 'off' | 'node-flag' | 'invalid' };

/**
 * `flag` (`--name-with-dashes`) as `variable` in `sources.env` says: a whole number, `0` or `off`
 * (none), empty or unset (`byDefault`); anything else is `invalid` (none set).
 */
export function v8FlagValue(
  flag: string,
  variable: string,
  byDefault: number,
  sources: V8FlagSources = {},
): V8FlagValue {
  const { env = process.env, execArgv = process.execArgv } = sources;
  // V8 takes a flag's name with dashes or underscores.
  const underscored = flag.replaceAll('-', '_').replace(/^__/, '--');
  const named = (arg: string) =>
    arg === flag || arg.startsWith(`${flag}=`) || arg === underscored || arg.startsWith(`${underscored}=`);
  const nodeOptions = env.NODE_OPTIONS?.split(/\s+/) ?? [];
  if (execArgv.some(named) || nodeOptions.some(named)) return { value: undefined, skipped: 'node-flag' };
  const raw = env[variable]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return { value: byDefault };
  if (raw === 'off' || raw === '0') return { value: undefined, skipped: 'off' };
  if (!/^\d+$/.test(raw)) return { value: undefined, skipped: 'invalid' };
  return { value: Number(raw) };
}
