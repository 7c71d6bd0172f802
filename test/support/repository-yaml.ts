/** The repository's own YAML, for tests that check a reader or a schema against every real example. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Every YAML file of the repository (hidden folders and node_modules aside) and every `yaml` block
 * of its Markdown, labelled by path (and block number).
 */
export function repositoryYaml(): { label: string; text: string }[] {
  const out: { label: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.ya?ml$/i.test(entry.name))
        out.push({ label: path.relative(root, full), text: readFileSync(full, 'utf8') });
      else if (/\.md$/i.test(entry.name)) {
        let k = 0;
        for (const m of readFileSync(full, 'utf8').matchAll(/^```ya?ml\n([\s\S]*?)^```/gm))
          out.push({ label: `${path.relative(root, full)} yaml block ${++k}`, text: m[1]! });
      }
    }
  };
  walk(root);
  return out;
}
