import type { Options } from 'tsup';

/**
 * How `@svc/contract` and `@svc/client` are built for consumers (each package's `build`, run from its
 * folder): one entry, ESM (`.mjs`) and CommonJS (`.js`) with their `.d.mts`/`.d.ts`, dependencies left
 * to the consumer's install. `shims` gives the ESM build `__dirname` (the contract finds its
 * `openapi.json` beside `dist/`). docs/decisions/0041-sdk-packages.md.
 */
export default {
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  shims: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  outDir: 'dist',
} satisfies Options;
