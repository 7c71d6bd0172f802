/**
 * certbot with its RFC 2136 plugin, from PyPI, in a virtual environment cached outside the clone
 * (`~/.cache/zonekeeper/certbot-venv`, or `$ZONEKEEPER_CACHE/certbot-venv`): the ACME client of
 * test/acme-dns01.test.ts. Installed once; `npm test` installs it before the suites start
 * (test/support/prepare-tools.ts), so a suite's own time never includes it.
 */
import { execFile } from 'node:child_process';
import { homedir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const CERTBOT_VERSION = '5.8.0';

function venvDir(): string {
  return path.join(process.env.ZONEKEEPER_CACHE ?? path.join(homedir(), '.cache/zonekeeper'), 'certbot-venv');
}

/** The path of the certbot executable, installing it first when it does not run. */
export async function certbot(): Promise<string> {
  const venv = venvDir();
  const bin = path.join(venv, 'bin/certbot');
  try {
    const { stdout, stderr } = await run(bin, ['--version']);
    if (`${stdout}${stderr}`.includes(CERTBOT_VERSION)) return bin;
  } catch {
    // Not installed yet (or broken): (re)install below.
  }
  await run('python3', ['-m', 'venv', venv]);
  await run(
    path.join(venv, 'bin/pip'),
    ['install', '-q', `certbot==${CERTBOT_VERSION}`, `certbot-dns-rfc2136==${CERTBOT_VERSION}`],
    { timeout: 15 * 60_000 },
  );
  return bin;
}
