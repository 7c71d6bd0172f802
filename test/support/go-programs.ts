/**
 * The Go programs the suites run (ExternalDNS's code, Pebble) all live in one Go module,
 * `test/gotools/` (`zonekeeper.test/gotools`): one package directory per program of ours, and the
 * programs of other modules pinned by `tools.go`. `goProgram` builds one into the cache outside the
 * clone (`~/.cache/zonekeeper/bin`, or `$ZONEKEEPER_CACHE/bin`) and returns its path.
 *
 * A program is built once: beside the binary a stamp holds a digest of go.mod, go.sum and the
 * package's Go files; a later call with the same digest reuses the binary. The module needs Go 1.27
 * (ExternalDNS v0.23), so GOTOOLCHAIN defaults to go1.27.3, fetched through the Go module proxy on first
 * use; GOFLAGS=-mod=mod lets a missing go.sum line be added instead of failing the build.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The wrapper module's directory. */
export const GO_MODULE_DIR = path.join(import.meta.dirname, '..', 'gotools');
const MODULE_PATH = 'zonekeeper.test/gotools';
const DEFAULT_TOOLCHAIN = 'go1.27.3';

/** Pebble, the ACME test server, pinned by tools.go. */
export const PEBBLE_PROGRAM = 'github.com/letsencrypt/pebble/v2/cmd/pebble';

/** Every program the suites run: `npm test` builds them before the suites start (prepare-tools.ts). */
export const GO_PROGRAMS = [
  'externaldns-controller',
  'externaldns-inmemory-webhook',
  'externaldns-rfc2136',
  'externaldns-webhook',
  'externaldns-webhook-owner',
  PEBBLE_PROGRAM,
] as const;

/** The environment every `go` command of the suites runs with. */
export function goEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? DEFAULT_TOOLCHAIN,
    GOFLAGS: '-mod=mod',
  };
}

function binDir(): string {
  return path.join(process.env.ZONEKEEPER_CACHE ?? path.join(homedir(), '.cache/zonekeeper'), 'bin');
}

const building = new Map<string, Promise<string>>();

/**
 * The path of the built program `program`: a package directory of `test/gotools` (`externaldns-webhook`)
 * or an import path (`github.com/letsencrypt/pebble/v2/cmd/pebble`, pinned in tools.go). Builds it
 * when the cached binary is missing or was built from other sources.
 */
export function goProgram(program: string): Promise<string> {
  let pending = building.get(program);
  if (!pending) {
    pending = build(program);
    building.set(program, pending);
    pending.catch(() => building.delete(program));
  }
  return pending;
}

async function build(program: string): Promise<string> {
  const local = !program.includes('.') || program.startsWith(`${MODULE_PATH}/`);
  const dir = local ? program.replace(`${MODULE_PATH}/`, '') : undefined;
  const target = dir !== undefined ? `./${dir}` : program;
  const name = path.basename(program);
  const bin = path.join(binDir(), name);
  const digest = await sourceDigest(dir);
  const stampFile = `${bin}.stamp`;
  const stamp = await readFile(stampFile, 'utf8').catch(() => '');
  if (stamp.trim() === digest && (await stat(bin).catch(() => undefined))?.isFile()) return bin;
  await mkdir(binDir(), { recursive: true });
  // Built beside and renamed: two suites building at once never run half a binary.
  const tmp = `${bin}.${process.pid}.tmp`;
  try {
    await run('go', ['build', '-o', tmp, target], {
      cwd: GO_MODULE_DIR,
      env: goEnv(),
      timeout: 20 * 60_000,
      maxBuffer: 16 << 20,
    });
  } catch (e) {
    await rm(tmp, { force: true });
    const err = e as Error & { stderr?: string };
    throw new Error(`building ${program} in test/gotools failed: ${err.stderr || err.message}`);
  }
  await rename(tmp, bin);
  await writeFile(stampFile, `${digest}\n`);
  return bin;
}

/** SHA-256 over go.mod, go.sum and the Go files of the package directory `dir` (if one of ours). */
async function sourceDigest(dir: string | undefined): Promise<string> {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(f).update(await readFile(path.join(GO_MODULE_DIR, f)));
  if (dir !== undefined) {
    const pkg = path.join(GO_MODULE_DIR, dir);
    for (const f of (await readdir(pkg)).filter((n) => n.endsWith('.go')).sort())
      h.update(f).update(await readFile(path.join(pkg, f)));
  }
  return h.digest('hex');
}

/** The module cache directory of a module the wrapper requires (e.g. Pebble's test certificates). */
export async function goModuleDir(modulePath: string): Promise<string> {
  const { stdout } = await run('go', ['list', '-m', '-f', '{{.Dir}}', modulePath], {
    cwd: GO_MODULE_DIR,
    env: goEnv(),
    timeout: 10 * 60_000,
  });
  return stdout.trim();
}
