/**
 * The manifest source's tests again with every file's definitions packed (`FileDefinitions`): they
 * use files of a few objects, which stay maps at the usual threshold.
 */
import { FileDefinitions } from './file-definitions.ts';

FileDefinitions.packMin = 1;
await import('./manifest-source.test.ts');
await import('./manifest-source-two-files.test.ts');
await import('./zone-acceptance.test.ts');
await import('./manifest-source-early.test.ts');
