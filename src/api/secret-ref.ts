/** A secret given by reference only: a file, an environment variable, or a Kubernetes Secret key. */
import { DNS1123_LABEL, DNS1123_SUBDOMAIN } from './meta.ts';
import { type Infer, s } from './schema.ts';

export const secretRefSchema = s.object(
  {
    file: s.optional(
      s.string({
        description:
          'A file holding the secret (folder mode and mounted Secrets); surrounding whitespace is ignored.',
        minLength: 1,
        maxLength: 4096,
      }),
    ),
    env: s.optional(
      s.string({
        description: 'An environment variable holding the secret.',
        minLength: 1,
        maxLength: 256,
        pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
        patternMessage:
          'is not an environment variable name (letters, digits and "_", not starting with a digit)',
      }),
    ),
    namespace: s.optional(
      s.string({ description: 'Namespace of the Kubernetes Secret.', maxLength: 63, pattern: DNS1123_LABEL }),
    ),
    name: s.optional(
      s.string({ description: 'Name of the Kubernetes Secret.', maxLength: 253, pattern: DNS1123_SUBDOMAIN }),
    ),
    key: s.optional(
      s.string({
        description: 'Key in the Kubernetes Secret.',
        minLength: 1,
        maxLength: 253,
        pattern: '^[-._a-zA-Z0-9]+$',
      }),
    ),
  },
  {
    description:
      'Where a secret is kept — never the secret itself: `file`, `env`, or a Kubernetes Secret (`name`, `key`, and `namespace`).',
    rules: [
      {
        cel: '(has(self.file) ? 1 : 0) + (has(self.env) ? 1 : 0) + (has(self.name) ? 1 : 0) == 1',
        message: 'set exactly one of file, env, or name (with key) of a Kubernetes Secret',
        code: 'EXACTLY_ONE',
        check: (self) => [self.file, self.env, self.name].filter((v) => v !== undefined).length === 1,
      },
      {
        cel: 'has(self.name) == has(self.key)',
        message: 'a Kubernetes Secret reference needs both name and key',
        code: 'SECRET_KEY_REQUIRED',
        check: (self) => (self.name === undefined) === (self.key === undefined),
      },
    ],
  },
);
export type SecretRef = Infer<typeof secretRefSchema>;

/**
 * Reads a secret by reference; `namespace` is the referring object's, for Kubernetes Secrets without
 * one. Implemented at the edge (files and environment in folder mode, the Kubernetes API in a
 * cluster) and handed to whatever needs a secret: the controller, the PowerDNS backend.
 */
export type SecretResolver = (ref: SecretRef, namespace?: string) => Promise<string>;

/** A secret that cannot be read, with a stable code (e.g. SECRET_NOT_FOUND) for conditions and logs. */
export class SecretError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'SecretError';
    this.code = code;
  }
}
