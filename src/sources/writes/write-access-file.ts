import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { validateWriteAccess, type WriteAccessConfig } from '../../writes/credentials.ts';

/**
 * Reads the write-access file (`--write-access`): YAML or JSON with `credentials` (name, kind,
 * namespace, secretRef), `quotas` by namespace and `defaultQuota` (ADR 0016). Throws with every
 * problem, each with its path, so the process does not start on a table it would misread.
 */
export async function loadWriteAccess(file: string): Promise<WriteAccessConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new Error(
      `--write-access ${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  let value: unknown;
  try {
    value = parse(text);
  } catch (e) {
    throw new Error(`--write-access ${file}: not YAML or JSON (${(e as Error).message})`);
  }
  const checked = validateWriteAccess(value);
  if (!checked.ok)
    throw new Error(
      `--write-access ${file}: ${checked.problems.map((p) => `${p.path}: ${p.message} (${p.code})`).join('; ')}`,
    );
  return checked.config;
}
