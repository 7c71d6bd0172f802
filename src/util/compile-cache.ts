/**
 * Node's module compile cache for Zonekeeper's own processes (docs/adr/0030). Node 24 strips the
 * TypeScript of every module and compiles it at each start, in the main thread and again in every
 * worker thread (parse and DNS threads); the compile cache keeps the stripped source and V8's code
 * cache on disk, keyed by each file's content, so a restart skips both.
 *
 * This module imports only Node's built-ins: it runs before the rest of the program is loaded.
 */
import { lstatSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';

export type CompileCacheOutcome =
  | { status: 'enabled'; directory: string }
  /** `NODE_COMPILE_CACHE` named a directory: Node enabled it before any of this ran. */
  | { status: 'already-enabled'; directory: string }
  /** `NODE_DISABLE_COMPILE_CACHE` is set. */
  | { status: 'disabled' }
  /** No usable private directory (no home folder, or one that others may write to), or Node failed. */
  | { status: 'off'; reason: string };

/**
 * Where Zonekeeper keeps the cache unless `NODE_COMPILE_CACHE` says otherwise: the user's cache folder
 * (`$XDG_CACHE_HOME`, else `~/.cache`), `zonekeeper/node-compile-cache`. Not the shared temporary
 * folder Node would pick: whoever can write the cache decides what code runs.
 */
export function compileCacheDir(
  env: NodeJS.ProcessEnv = process.env,
  home: string = safeHome(),
): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  const base =
    xdg && path.isAbsolute(xdg) ? xdg : home && path.isAbsolute(home) ? path.join(home, '.cache') : '';
  return base === '' ? undefined : path.join(base, 'zonekeeper', 'node-compile-cache');
}

function safeHome(): string {
  try {
    return homedir();
  } catch {
    return '';
  }
}

/**
 * Why `dir` may not hold the cache, or undefined when only this user may write to it; made (with its
 * missing parents) mode 0700 if absent. A planted cache entry would be run as Zonekeeper's own code,
 * so, as OpenSSH checks a user's files: the folder must be a real directory (not a symbolic link)
 * owned by this user that its group and others may not write to, and every folder above it must be
 * owned by this user or root and not writable by group or others, unless it is sticky (as /tmp is),
 * where others cannot rename or remove what this user made.
 */
export function privateDir(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stat = lstatSync(dir);
    if (!stat.isDirectory()) return `${dir} is not a directory`;
    const uid = process.getuid?.();
    if (uid === undefined) return undefined; // no owners to check (Windows)
    if (stat.uid !== uid) return `${dir} belongs to another user`;
    if ((stat.mode & 0o022) !== 0) return `${dir} may be written by its group or others`;
    for (let above = path.dirname(realpathSync(dir)); ; above = path.dirname(above)) {
      const folder = statSync(above);
      if (folder.uid !== uid && folder.uid !== 0) return `${above} belongs to another user`;
      if ((folder.mode & 0o022) !== 0 && (folder.mode & STICKY) === 0)
        return `${above} may be written by its group or others`;
      if (path.dirname(above) === above) return undefined;
    }
  } catch (e) {
    return (e as Error).message;
  }
}

const STICKY = 0o1000;

let outcome: CompileCacheOutcome | undefined;
/** The folder Zonekeeper gave `module.enableCompileCache` (the worker threads are given it too). */
let enabledIn = '';

/**
 * Enables the compile cache for this process and the worker threads it starts (they inherit
 * `NODE_COMPILE_CACHE` from `process.env`, as Node's documentation of `module.enableCompileCache`
 * says). Never throws: without a cache Zonekeeper starts as before, only slower.
 */
export function enableCompileCache(): CompileCacheOutcome {
  if (outcome) return outcome;
  outcome = decide();
  // Worker threads enable it from this variable: the folder given to Node (it adds a folder per
  // Node version and user inside). One the environment set is theirs already, left as it is.
  if (outcome.status === 'enabled') process.env.NODE_COMPILE_CACHE = enabledIn;
  return outcome;
}

function decide(): CompileCacheOutcome {
  const env = process.env;
  if (env.NODE_DISABLE_COMPILE_CACHE) return { status: 'disabled' };
  const already = module.getCompileCacheDir?.();
  if (already) return { status: 'already-enabled', directory: already };
  // The operator named a folder and Node could not use it (say, read-only and filled as another
  // user): that is said, not replaced by a folder of Zonekeeper's choosing.
  if (env.NODE_COMPILE_CACHE)
    return { status: 'off', reason: `NODE_COMPILE_CACHE=${env.NODE_COMPILE_CACHE} could not be used` };
  if (typeof module.enableCompileCache !== 'function')
    return { status: 'off', reason: 'this Node has no compile cache' };
  const dir = compileCacheDir(env);
  if (dir === undefined) return { status: 'off', reason: 'no home or XDG_CACHE_HOME folder to keep it in' };
  const refused = privateDir(dir);
  if (refused !== undefined) return { status: 'off', reason: refused };
  const result = module.enableCompileCache(dir);
  if (result.directory !== undefined && result.status !== module.constants.compileCacheStatus.FAILED) {
    enabledIn = dir;
    return { status: 'enabled', directory: result.directory };
  }
  return { status: 'off', reason: result.message ?? 'Node could not enable it' };
}

/** What `enableCompileCache` decided (undefined before it ran). */
export function compileCacheOutcome(): CompileCacheOutcome | undefined {
  return outcome;
}

/**
 * Writes what this thread compiled so far to the cache now, not only when the thread exits: a
 * server runs until it is stopped, and one stopped by SIGKILL would never write it. Does nothing
 * without a cache; never throws.
 */
export function flushCompileCache(): void {
  try {
    if (module.getCompileCacheDir?.()) module.flushCompileCache?.();
  } catch {
    // A cache that cannot be written only costs the next start its compile time.
  }
}
