import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface DigResult {
  status: string;
  flags: string[];
  answer: string[];
  authority: string[];
  additional: string[];
  raw: string;
}

export interface DigOptions {
  tcp?: boolean;
  /** Extra dig options such as `+bufsize=512` or `+noedns`. */
  args?: string[];
  /** Use kdig (Knot) instead of dig (BIND). */
  tool?: 'dig' | 'kdig';
  qclass?: string;
}

/**
 * Queries a server with the real `dig` (or `kdig`) and parses its output: status, header flags, and
 * each section as normalised record lines `owner TTL CLASS TYPE RDATA` (whitespace collapsed).
 */
export async function dig(
  port: number,
  name: string,
  type: string,
  options: DigOptions = {},
): Promise<DigResult> {
  const tool = options.tool ?? 'dig';
  const args = [
    `@127.0.0.1`,
    '-p',
    String(port),
    name,
    type,
    '+norec',
    '+time=2',
    tool === 'kdig' ? '+retry=0' : '+tries=1',
  ];
  if (options.qclass) args.push('-c', options.qclass);
  if (options.tcp) args.push('+tcp');
  args.push(...(options.args ?? []));
  const { stdout } = await run(tool, args, { timeout: 10_000 });
  return parseDig(stdout);
}

export function parseDig(text: string): DigResult {
  const status = /status: ([A-Z]+)/.exec(text)?.[1] ?? 'NONE';
  const flags = (/;; [Ff]lags: ([^;]*);/.exec(text)?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
  const sections: Record<string, string[]> = { ANSWER: [], AUTHORITY: [], ADDITIONAL: [] };
  let current: string | undefined;
  for (const line of text.split('\n')) {
    const header = /^;; (ANSWER|AUTHORITY|ADDITIONAL) SECTION:/.exec(line);
    if (header) {
      current = header[1];
      continue;
    }
    if (line.startsWith(';;') || line.trim() === '') {
      if (line.trim() === '') current = undefined;
      continue;
    }
    if (current && !line.startsWith(';')) sections[current]!.push(line.trim().replace(/\s+/g, ' '));
  }
  return {
    status,
    flags,
    answer: sections.ANSWER!,
    authority: sections.AUTHORITY!,
    additional: sections.ADDITIONAL!,
    raw: text,
  };
}

/** RDATA of the answer lines of one type. */
export function rdataOf(result: DigResult, type: string): string[] {
  return result.answer
    .map((l) => l.split(' '))
    .filter((f) => f[3] === type)
    .map((f) => f.slice(4).join(' '));
}

/** The serial of the SOA a server answers for `zone` now, or undefined when it answers none. */
export async function soaSerial(port: number, zone: string): Promise<number | undefined> {
  const serial = rdataOf(await dig(port, zone, 'SOA'), 'SOA')[0]?.split(/\s+/)[2];
  return serial === undefined ? undefined : Number(serial);
}
