/** `node src/api/write-crds.ts [--out DIR]`: writes deploy/crds without the CLI. */
import { parseArgs } from 'node:util';
import { writeCrdFiles } from './crd-files.ts';

const { values } = parseArgs({ options: { out: { type: 'string', default: 'deploy/crds' } } });
for (const path of writeCrdFiles(values.out)) console.log(path);
