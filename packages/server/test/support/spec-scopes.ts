import fs from 'node:fs';
import { resolveLocalRef } from '@svc/contract';
import { bundledSpecPath } from '@svc/contract/node';

type Scheme = { flows: { authorizationCode: { scopes: Record<string, string> } }; 'x-scope-dependencies'?: Record<string, string[]> };

// Read from the bundled spec, not from @svc/contract's catalogue: these tests hold the server to the spec itself.
const spec = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as { components: { securitySchemes: Record<string, unknown> } };
const scheme = resolveLocalRef<Scheme>(spec, spec.components.securitySchemes.oauth2);

/** Each scope the spec declares and its description, in the spec's order. */
export const specScopeDescriptions: ReadonlyMap<string, string> = new Map(Object.entries(scheme.flows.authorizationCode.scopes));

/** Each scope that needs others, with the scopes it needs (`x-scope-dependencies`). */
export const specScopeDependencies: ReadonlyMap<string, readonly string[]> = new Map(Object.entries(scheme['x-scope-dependencies'] ?? {}));

export const specDescriptionOf = (scope: string): string => {
  const description = specScopeDescriptions.get(scope);
  if (description === undefined) throw new Error(`The spec declares no scope ${scope}`);
  return description;
};
