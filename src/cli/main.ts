// The `zonekeeper` program (run by `bin/zonekeeper.js`, `npm start` and the image's entry point).
// It enables Node's compile cache before the program's modules are loaded, so that loading them can
// use it (docs/adr/0030), then runs the command line (`cli.ts`).
import { enableCompileCache } from '../util/compile-cache.ts';

enableCompileCache();
await import('./cli.ts');
