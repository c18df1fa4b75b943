import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { locations, repoRoot } from './paths';

export type OpenApiDocument = {
  openapi: string;
  paths: Record<string, Record<string, unknown>>;
  webhooks?: Record<string, unknown>;
  components: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
};

/** Runs the Redocly CLI quietly, failing with its output when it fails. */
export function redocly(args: string[]): string {
  try {
    return execFileSync(locations.redoclyBin, args, {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    });
  } catch (error) {
    const failure = error as { stdout?: string; stderr?: string };
    throw new Error(`redocly ${args.join(' ')} failed:\n${failure.stdout ?? ''}${failure.stderr ?? ''}`);
  }
}

/** Bundles spec/ into one document whose shared parts live in `components` (refs kept). */
export function bundleSpec(): OpenApiDocument {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bundle-'));
  const out = path.join(dir, 'openapi.json');
  try {
    redocly(['bundle', locations.specRoot, '--output', out, '--ext', 'json']);
    return JSON.parse(fs.readFileSync(out, 'utf8')) as OpenApiDocument;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The bundled document as committed in packages/contract. */
export const bundleText = (document: OpenApiDocument): string => `${JSON.stringify(document, null, 2)}\n`;
