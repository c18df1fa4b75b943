import type { Options } from 'tsup';

/**
 * The server's build (`pnpm build`): the server and the admin CLI, each one CommonJS file with its
 * source map, run by plain `node` with no TypeScript loader. Dependencies stay external (they are
 * the production install's `node_modules`); the workspace's `@svc/contract` is bundled in, since its
 * package points at TypeScript sources. docs/decisions/0049-production-build-and-start.md.
 */
export default {
  entry: { main: 'src/main.ts', svc: 'src/cli/svc.ts' },
  format: ['cjs'],
  platform: 'node',
  target: 'node20',
  outDir: 'dist',
  clean: true,
  sourcemap: true,
  // The maps name files and lines only: `--enable-source-maps` parses the whole map at start, and the
  // sources' text (two thirds of it) is never needed to map a stack trace.
  esbuildOptions(options) {
    options.sourcesContent = false;
  },
  splitting: false,
  // The package's code, exactly: its `openapi.json` stays a file that `core/paths.ts` resolves at run
  // time from the installed package (esbuild warns when a `require.resolve` target is bundled).
  noExternal: [/^@svc\/contract$/],
  // The CLI's entry is the package's `bin`: executable as it is.
  banner: { js: '#!/usr/bin/env node' },
} satisfies Options;
