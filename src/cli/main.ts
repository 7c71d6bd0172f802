import { parseArgs } from 'node:util';
import { writeCrdFiles } from '../api/crd-files.ts';
import { crdsYaml } from '../api/index.ts';
import { createLogger } from './logger.ts';
import { startServe } from './serve.ts';
import { runStatus } from './status.ts';
import { runValidate } from './validate.ts';

const USAGE = `zonekeeper — Kubernetes-native authoritative DNS

Usage:
  zonekeeper serve --manifests DIR [--dns 127.0.0.1:5353] [--http 127.0.0.1:8080] [--state-dir DIR]
                   [--alias-resolver HOST:PORT] [--identity NAME] [--version-string TEXT]
      Serve the zones described by the YAML in DIR with the built-in DNS server; follow edits live.
  zonekeeper validate PATH...
      Check manifests (files or folders); print one line per problem; exit 1 if any is invalid.
  zonekeeper status [--http URL]
      Show zones and record sets of a running \`zonekeeper serve\` (default http://127.0.0.1:8080).
  zonekeeper crds [--out DIR]
      Print the CustomResourceDefinitions, or write one file per kind into DIR.
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({
        args: rest,
        options: {
          manifests: { type: 'string' },
          dns: { type: 'string', default: '127.0.0.1:5353' },
          http: { type: 'string', default: '127.0.0.1:8080' },
          'state-dir': { type: 'string' },
          'alias-resolver': { type: 'string' },
          identity: { type: 'string' },
          'version-string': { type: 'string' },
        },
      });
      if (!values.manifests) throw new UsageError('serve needs --manifests DIR');
      const log = createLogger();
      const handle = await startServe({
        manifests: values.manifests,
        dns: values.dns,
        http: values.http,
        ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
        ...(values['alias-resolver'] ? { aliasResolver: values['alias-resolver'] } : {}),
        ...(values.identity ? { identity: values.identity } : {}),
        ...(values['version-string'] ? { version: values['version-string'] } : {}),
        log,
      });
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          log('info', `received ${signal}, shutting down`);
          resolve();
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
      await handle.stop();
      return 0;
    }
    case 'validate': {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      if (positionals.length === 0) throw new UsageError('validate needs at least one PATH');
      return runValidate(positionals, process.stdout);
    }
    case 'status': {
      const { values } = parseArgs({
        args: rest,
        options: { http: { type: 'string', default: 'http://127.0.0.1:8080' } },
      });
      const url = /^https?:\/\//.test(values.http) ? values.http : `http://${values.http}`;
      return runStatus(url, process.stdout);
    }
    case 'crds': {
      const { values } = parseArgs({ args: rest, options: { out: { type: 'string' } } });
      if (values.out) {
        for (const file of writeCrdFiles(values.out)) process.stdout.write(`wrote ${file}\n`);
      } else {
        process.stdout.write(crdsYaml());
      }
      return 0;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`zonekeeper: ${(e as Error).message}\n\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`zonekeeper: ${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
