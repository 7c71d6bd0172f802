// Import rules of Zonekeeper's layers (docs/architecture.md, "Layers"), checked by `npm run lint`.
//
// TypeScript sources are parsed with swc: dependency-cruiser's TypeScript parser needs the
// `typescript` package's JavaScript API, which TypeScript 7 no longer ships. swc marks type-only
// imports (`import type`, `import { type X }`, `export type … from`) as such and they stay in the
// graph: every rule below, the cycle rule included, counts them like any other import.

import swc from '@swc/core';

// dependency-cruiser falls back, without a word, to a JavaScript parser that drops type-only imports
// when swc cannot be loaded (e.g. its native binding is missing): fail here instead.
const probe = swc.parseSync("import type { A } from './a.ts';", { syntax: 'typescript' }).body[0];
if (probe?.type !== 'ImportDeclaration' || probe.typeOnly !== true) {
  throw new Error(
    '.dependency-cruiser.mjs: swc does not report type-only imports; the import rules cannot be checked',
  );
}

const CORE = '^src/(api|dns|zones)/';
/** Outside the core, the folder a module sits in is its layer; `util` is below everything. */
const NOT_CORE_OR_UTIL = '^src/(?!(api|dns|zones|util)/)';
/** Test files beside adapter code may wire real adapters together (a controller with the built-in server). */
const TEST = '\\.test\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'core-imports-no-adapter',
      comment:
        'The pure core (src/api, src/dns, src/zones) imports only itself and src/util: no controller, server, backend, source, CLI or metrics.',
      severity: 'error',
      from: { path: CORE },
      to: { path: NOT_CORE_OR_UTIL },
    },
    {
      name: 'dns-is-the-base-of-the-core',
      comment: 'src/dns (names, RDATA, wire) knows nothing of the API kinds or of zones.',
      severity: 'error',
      from: { path: '^src/dns/' },
      to: { path: '^src/(api|zones)/' },
    },
    {
      name: 'api-imports-no-zone-rules',
      comment: 'src/api (schemas, validation) sits below src/zones (the rules that use it).',
      severity: 'error',
      from: { path: '^src/api/' },
      to: { path: '^src/zones/' },
    },
    {
      name: 'util-imports-nothing',
      comment: 'src/util holds generic helpers that any layer may use; it imports no other folder.',
      severity: 'error',
      from: { path: '^src/util/' },
      to: { path: '^src/(?!util/)' },
    },
    {
      name: 'metrics-imports-only-util',
      comment: 'src/metrics (the Prometheus registry) is used by every adapter and uses none.',
      severity: 'error',
      from: { path: '^src/metrics/' },
      to: { path: '^src/(?!(metrics|util)/)' },
    },
    {
      name: 'nothing-imports-the-cli',
      comment:
        'src/cli is the edge that wires everything; only it, bin/zonekeeper.js and the suites under test/ (which drive the product from its edge) import it.',
      severity: 'error',
      from: { pathNot: '^(src/cli/|bin/|test/)' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'writes-are-pure',
      comment:
        'src/writes (the rules of records written through APIs: credentials, quotas, request checks) does no I/O; its stores live in src/sources/writes.',
      severity: 'error',
      from: { path: '^src/writes/' },
      to: { path: NOT_CORE_OR_UTIL, pathNot: '^src/writes/' },
    },
    {
      name: 'homelab-protocol-is-pure',
      comment:
        'src/homelab-protocol (the homelab DNS webhook protocol: messages, request signatures) does no I/O; the client, the provider endpoint and the backend that speak it are adapters.',
      severity: 'error',
      from: { path: '^src/homelab-protocol/' },
      to: { path: NOT_CORE_OR_UTIL, pathNot: '^src/homelab-protocol/' },
    },
    {
      name: 'backend-contract-is-neutral',
      comment:
        'The Backend contract (src/backends/backend.ts) is what the controller programs and every backend implements: it names core types only, never one implementation.',
      severity: 'error',
      from: { path: '^src/backends/backend\\.ts$' },
      to: { path: NOT_CORE_OR_UTIL },
    },
    {
      name: 'control-imports-no-adapter',
      comment:
        'src/control drives backends through the Backend contract and stores through ResourceStore/SerialStore; it imports no backend implementation, no server, no source, no CLI.',
      severity: 'error',
      from: { path: '^src/control/', pathNot: TEST },
      to: { path: '^src/(server|sources|cli|backends|domains)/', pathNot: '^src/backends/backend\\.ts$' },
    },
    {
      name: 'server-imports-no-orchestration',
      comment:
        'src/server (the built-in DNS server) knows nothing of controllers, backends or sources; backends/builtin adapts it.',
      severity: 'error',
      from: { path: '^src/server/', pathNot: TEST },
      to: { path: '^src/(control|backends|sources|cli)/' },
    },
    {
      name: 'backends-import-no-control-or-source',
      comment:
        'A backend implements the contract; it does not reach back into the controller or the sources.',
      severity: 'error',
      from: { path: '^src/backends/', pathNot: TEST },
      to: { path: '^src/(control|sources|cli)/' },
    },
    {
      name: 'sources-import-no-server-or-backend',
      comment: 'Sources (front doors) feed a ResourceStore; they do not serve or program DNS.',
      severity: 'error',
      from: { path: '^src/sources/', pathNot: TEST },
      to: { path: '^src/(server|backends|cli)/' },
    },
    {
      name: 'domains-import-no-orchestration',
      comment:
        'src/domains (the look-ups of Domain verification: DNS, HTTP) is an adapter the operator hands to the domain controller; it imports no controller, server, backend, source or CLI.',
      severity: 'error',
      from: { path: '^src/domains/', pathNot: TEST },
      to: { path: '^src/(control|server|backends|sources|cli)/' },
    },
    {
      name: 'no-cycles',
      comment: 'No import cycles anywhere, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-unresolvable-imports',
      comment: 'Every relative import resolves (a check that the parser saw the import at all).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^(src|test|bench|scripts|bin)/',
  },
};
