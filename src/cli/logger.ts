export type LogLevel = 'info' | 'warn' | 'error';
export type Log = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/**
 * One line per event on stderr: time, level, message, then key=value fields. Strings are quoted,
 * numbers, booleans and null written as they are, and anything else as JSON (an object of counts, a
 * list of examples), so a value never reads `[object Object]` and never breaks the line.
 */
export function createLogger(stream: NodeJS.WritableStream = process.stderr): Log {
  return (level, message, fields) => {
    const extra = fields
      ? Object.entries(fields)
          .map(([k, v]) => ` ${k}=${formatValue(v)}`)
          .join('')
      : '';
    stream.write(`${new Date().toISOString()} ${level.padEnd(5)} ${message}${extra}\n`);
  };
}

/** A field's value as the log line writes it. */
export function formatValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (
    v === null ||
    v === undefined ||
    typeof v === 'number' ||
    typeof v === 'boolean' ||
    typeof v === 'bigint'
  )
    return String(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  try {
    return JSON.stringify(v, jsonValue) ?? String(v);
  } catch {
    // A cycle: what String makes of it, on one line.
    return JSON.stringify(String(v));
  }
}

/** JSON of what JSON.stringify would drop or throw on: bigints, errors, sets and maps. */
function jsonValue(_key: string, v: unknown): unknown {
  if (typeof v === 'bigint') return String(v);
  if (v instanceof Error) return v.message;
  if (v instanceof Set) return [...v];
  if (v instanceof Map) return Object.fromEntries(v);
  return v;
}
