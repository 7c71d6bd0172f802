import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { compileCacheDir, privateDir } from './compile-cache.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const scratch = mkdtempSync(path.join(tmpdir(), 'zk-compile-cache-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The environment of a child whose cache would go under `home` (and nowhere Node was told of). */
function envWith(home: string, more: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.XDG_CACHE_HOME;
  delete env.NODE_COMPILE_CACHE;
  delete env.NODE_DISABLE_COMPILE_CACHE;
  return { ...env, ...more };
}

describe('compileCacheDir', () => {
  test('the user cache folder: XDG_CACHE_HOME when absolute, else ~/.cache; none without either', () => {
    assert.equal(
      compileCacheDir({ XDG_CACHE_HOME: '/x/cache' }, '/home/u'),
      '/x/cache/zonekeeper/node-compile-cache',
    );
    assert.equal(compileCacheDir({}, '/home/u'), '/home/u/.cache/zonekeeper/node-compile-cache');
    assert.equal(
      compileCacheDir({ XDG_CACHE_HOME: 'relative' }, '/home/u'),
      '/home/u/.cache/zonekeeper/node-compile-cache',
    );
    assert.equal(compileCacheDir({}, ''), undefined);
    assert.equal(compileCacheDir({}, 'not/absolute'), undefined);
  });
});

describe('privateDir', () => {
  test('made with its parents, mode 0700', () => {
    const dir = path.join(scratch, 'made', 'a', 'b');
    assert.equal(privateDir(dir), undefined);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(path.join(scratch, 'made')).mode & 0o777, 0o700);
  });

  test('a folder its group or others may write to is not used: a planted entry would run as Zonekeeper', () => {
    const dir = path.join(scratch, 'open');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    assert.match(privateDir(dir) ?? '', /group or others/);
    chmodSync(dir, 0o720);
    assert.match(privateDir(dir) ?? '', /group or others/);
  });

  test('nor one below a folder others may write to (they could swap it), unless that folder is sticky', () => {
    const open = path.join(scratch, 'open-parent');
    mkdirSync(open, { mode: 0o700 });
    chmodSync(open, 0o777);
    assert.match(privateDir(path.join(open, 'zonekeeper', 'cache')) ?? '', /open-parent may be written/);
    chmodSync(open, 0o1777);
    assert.equal(privateDir(path.join(open, 'zonekeeper', 'cache')), undefined);
  });

  test('a symbolic link or a file is not used', () => {
    const target = path.join(scratch, 'target');
    mkdirSync(target, { mode: 0o700 });
    const link = path.join(scratch, 'link');
    symlinkSync(target, link);
    assert.match(privateDir(link) ?? '', /not a directory/);
  });
});

describe('the zonekeeper program and the compile cache', () => {
  test('a run fills the cache under the home folder; NODE_DISABLE_COMPILE_CACHE keeps it off', async () => {
    const home = path.join(scratch, 'home-on');
    mkdirSync(home);
    await run(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), 'help'], { env: envWith(home) });
    const dir = path.join(home, '.cache/zonekeeper/node-compile-cache');
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    // One folder per Node version and flags, holding an entry per module loaded.
    const versions = readdirSync(dir);
    assert.equal(versions.length, 1);
    assert.ok(readdirSync(path.join(dir, versions[0]!)).length > 50);

    const off = path.join(scratch, 'home-off');
    mkdirSync(off);
    await run(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), 'help'], {
      env: envWith(off, { NODE_DISABLE_COMPILE_CACHE: '1' }),
    });
    assert.equal(existsSync(path.join(off, '.cache')), false);
  });

  test('worker threads started after it use the same cache (they inherit NODE_COMPILE_CACHE)', async () => {
    const home = path.join(scratch, 'home-worker');
    mkdirSync(home);
    const script = `
      import module from 'node:module';
      import { Worker } from 'node:worker_threads';
      import { enableCompileCache } from ${JSON.stringify(path.join(ROOT, 'src/util/compile-cache.ts'))};
      const outcome = enableCompileCache();
      const w = new Worker("import module from 'node:module'; import { parentPort } from 'node:worker_threads'; parentPort.postMessage(module.getCompileCacheDir() ?? null);", { eval: true });
      w.on('message', (inWorker) => { console.log(JSON.stringify({ outcome, main: module.getCompileCacheDir(), inWorker })); w.terminate(); });
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: envWith(home),
    });
    const seen = JSON.parse(stdout) as {
      outcome: { status: string; directory: string };
      main: string;
      inWorker: string;
    };
    const dir = path.join(home, '.cache/zonekeeper/node-compile-cache');
    assert.equal(seen.outcome.status, 'enabled');
    assert.ok(seen.main.startsWith(dir), seen.main);
    assert.equal(seen.inWorker, seen.main);
  });

  test('a NODE_COMPILE_CACHE the environment set: every thread uses that folder; one Node cannot use is said', async () => {
    const home = path.join(scratch, 'home-env');
    mkdirSync(home);
    const given = path.join(scratch, 'given-cache');
    const script = `
      import module from 'node:module';
      import { Worker } from 'node:worker_threads';
      import { enableCompileCache } from ${JSON.stringify(path.join(ROOT, 'src/util/compile-cache.ts'))};
      const outcome = enableCompileCache();
      const env = process.env.NODE_COMPILE_CACHE;
      const w = new Worker("import module from 'node:module'; import { parentPort } from 'node:worker_threads'; parentPort.postMessage(module.getCompileCacheDir() ?? null);", { eval: true });
      w.on('message', (inWorker) => { console.log(JSON.stringify({ outcome, env, main: module.getCompileCacheDir() ?? null, inWorker })); w.terminate(); });
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: envWith(home, { NODE_COMPILE_CACHE: given }),
    });
    const seen = JSON.parse(stdout) as {
      outcome: { status: string };
      env: string;
      main: string;
      inWorker: string;
    };
    assert.equal(seen.outcome.status, 'already-enabled');
    assert.equal(seen.env, given);
    assert.ok(seen.main.startsWith(given), seen.main);
    assert.equal(seen.inWorker, seen.main);
    assert.equal(existsSync(path.join(home, '.cache')), false);

    // A file where the folder should be: Node cannot use it, and no other folder is taken instead.
    const notAFolder = path.join(scratch, 'not-a-folder');
    writeFileSync(notAFolder, '');
    const { stdout: off } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: envWith(home, { NODE_COMPILE_CACHE: notAFolder }),
    });
    const refused = JSON.parse(off) as { outcome: { status: string; reason: string }; main: string | null };
    assert.equal(refused.outcome.status, 'off');
    assert.match(refused.outcome.reason, /NODE_COMPILE_CACHE=.*not-a-folder could not be used/);
    assert.equal(refused.main, null);
    assert.equal(existsSync(path.join(home, '.cache')), false);
  });

  test('without a usable folder the program runs as before, with no cache', async () => {
    const shared = path.join(scratch, 'home-shared');
    mkdirSync(path.join(shared, '.cache/zonekeeper/node-compile-cache'), { recursive: true });
    chmodSync(path.join(shared, '.cache/zonekeeper/node-compile-cache'), 0o777);
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), 'help'], {
      env: envWith(shared),
    });
    assert.match(stdout, /zonekeeper/);
    assert.deepEqual(readdirSync(path.join(shared, '.cache/zonekeeper/node-compile-cache')), []);
  });
});
