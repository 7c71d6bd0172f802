/**
 * Go programs the suites build from the wrapper module test/gotools/ (module zonekeeper.test/gotools,
 * which needs Go 1.27: GOTOOLCHAIN fetches it through the Go module proxy on first use). Each is built
 * once per test process into ~/.cache/zonekeeper/bin/<name>; Go's build cache makes a rebuild of
 * unchanged sources quick.
 */
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './zonekeeper-process.ts';

const run = promisify(execFile);
const MODULE = path.join(ROOT, 'test/gotools');
const BIN = path.join(homedir(), '.cache/zonekeeper/bin');
const built = new Map<string, Promise<string>>();

/** The path of the binary of test/gotools/<dir>, built when needed. */
export function goProgram(dir: string): Promise<string> {
  let binary = built.get(dir);
  if (binary === undefined) {
    binary = (async () => {
      const out = path.join(BIN, path.basename(dir));
      await mkdir(BIN, { recursive: true });
      await run('go', ['build', '-o', out, `./${dir}`], {
        cwd: MODULE,
        env: { ...process.env, GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'go1.27.3', GOFLAGS: '-mod=mod' },
        timeout: 15 * 60_000,
        maxBuffer: 16 << 20,
      });
      return out;
    })();
    built.set(dir, binary);
  }
  return binary;
}
