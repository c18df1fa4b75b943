import fs from 'node:fs';
import path from 'node:path';
import { locations, repoRoot } from './paths';

/**
 * The raw openapi-typescript maps the SDK re-exports for advanced typing. They restate the whole
 * spec (the `operations` page alone came to 19 MB) and the Redoc reference beside this one already
 * documents every operation and schema, so the SDK reference leaves them out.
 */
const SPEC_MAPS = new Set(['components', 'operations', 'paths', 'webhooks']);

/**
 * Builds the SDK's API reference (TypeDoc, HTML) from `@svc/client`'s public entry into
 * docs/site/sdk/, which the server serves at /docs/sdk/ and the Redoc page links to. TypeDoc reads the
 * sources with the TypeScript compiler and writes its own assets: nothing is fetched.
 */
export async function buildSdkReference(): Promise<{ dir: string; pages: number }> {
  // typedoc is an ES module; the generators are CommonJS.
  const { Application, Converter } = await import('typedoc');
  const client = path.join(repoRoot, 'packages', 'client');
  const app = await Application.bootstrapWithPlugins({
    entryPoints: [path.join(client, 'src', 'index.ts')],
    tsconfig: path.join(client, 'tsconfig.reference.json'),
    name: '@svc/client SDK reference',
    readme: path.join(client, 'README.md'),
    includeVersion: true,
    excludePrivate: true,
    excludeInternal: true,
    githubPages: false,
    hideGenerator: true,
    // openapi-typescript's @description tags and the helper types behind the public ones are not the reader's concern.
    logLevel: 'Error',
  });
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const reflection of [...(context.project.children ?? [])]) if (SPEC_MAPS.has(reflection.name)) context.project.removeReflection(reflection);
  });
  const project = await app.convert();
  if (!project) throw new Error('TypeDoc could not read @svc/client (see the errors above)');
  fs.rmSync(locations.sdkReference, { recursive: true, force: true });
  await app.generateDocs(project, locations.sdkReference);
  const pages = fs.readdirSync(locations.sdkReference, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.html')).length;
  return { dir: locations.sdkReference, pages };
}
