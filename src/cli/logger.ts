export type LogLevel = 'info' | 'warn' | 'error';
export type Log = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** One line per event on stderr: time, level, message, then key=value fields. */
export function createLogger(stream: NodeJS.WritableStream = process.stderr): Log {
  return (level, message, fields) => {
    const extra = fields
      ? Object.entries(fields)
          .map(([k, v]) => ` ${k}=${typeof v === 'string' ? JSON.stringify(v) : String(v)}`)
          .join('')
      : '';
    stream.write(`${new Date().toISOString()} ${level.padEnd(5)} ${message}${extra}\n`);
  };
}
