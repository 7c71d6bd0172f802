#!/usr/bin/env node
// Entry point for the `zonekeeper` command. Source is TypeScript run directly by Node 24's type
// stripping (docs/adr/0001-run-typescript-with-node-type-stripping.md).
import '../src/cli/main.ts';
