import fs from 'node:fs';
import path from 'node:path';

/**
 * The server package's folder, found by walking up to its package.json: the same answer from the
 * TypeScript sources (`src/core/`) and from the bundled build (`dist/`), whose files all share one
 * `__dirname`.
 */
function packageRootOf(start: string): string {
  let folder = start;
  while (!fs.existsSync(path.join(folder, 'package.json'))) {
    const parent = path.dirname(folder);
    if (parent === folder) throw new Error(`no package.json above ${start}`);
    folder = parent;
  }
  return folder;
}

export const serverPackageRoot = packageRootOf(__dirname);

/** The workspace root: the default data directory is `./data` there, whatever the working directory. */
export const repositoryRoot = path.resolve(serverPackageRoot, '..', '..');

/** The built docs site (`pnpm build` or `pnpm run docs` writes it), served at `/docs`. */
export const docsSiteDir = path.join(repositoryRoot, 'docs', 'site');

/**
 * The bundled OpenAPI document, found through the `@svc/contract` package as installed beside the
 * server, so the build reads the same file as the sources without copying it.
 */
export const bundledSpecPath = require.resolve('@svc/contract/openapi.json');
