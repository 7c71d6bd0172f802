/**
 * Builds or installs, before the suites start, the test programs that are not Debian packages: the
 * Go programs of test/gotools (ExternalDNS's code, Pebble) and certbot. Each is cached outside the
 * clone and reused while its sources are unchanged, so on a warm machine this takes a second; on a
 * fresh one the builds run here, one at a time, instead of inside a suite's time limit beside other
 * suites. `npm test` runs it (scripts/test.sh); a suite still builds what is missing when run alone.
 *
 *   node test/support/prepare-tools.ts
 */
import { certbot } from './certbot.ts';
import { GO_PROGRAMS, goModuleDir, goProgram, PEBBLE_PROGRAM } from './go-programs.ts';

const t0 = performance.now();
for (const program of GO_PROGRAMS) await goProgram(program);
// Pebble's test certificates ship in its module: fetch it into the module cache too.
await goModuleDir(PEBBLE_PROGRAM.replace(/\/cmd\/pebble$/, ''));
await certbot();
console.error(
  `prepare-tools: ${GO_PROGRAMS.length} Go programs and certbot ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);
