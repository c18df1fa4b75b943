import { SCOPE_DEPENDENCIES, type Scope, scopeCatalogue } from '@svc/contract';

export type { Scope };

/** Every scope in the catalogue's order (the spec's), which is how the service writes scope lists. */
export const ALL_SCOPES: readonly Scope[] = scopeCatalogue.map((scope) => scope.name);

// Keyed by names that arrive in requests: a Map never answers for `constructor` or `__proto__`.
const descriptions: ReadonlyMap<string, string> = new Map(scopeCatalogue.map((scope) => [scope.name, scope.description]));

export const isScope = (value: string): value is Scope => descriptions.has(value);

/** The spec's description of a scope (what the consent page shows), or the name itself if it is not one. */
export const describeScope = (scope: string): string => descriptions.get(scope) ?? scope;

/** Scopes in the catalogue's order, each once: how the service writes scope lists. */
export const sortScopes = (scopes: Iterable<string>): Scope[] => {
  const wanted = new Set(scopes);
  return ALL_SCOPES.filter((scope) => wanted.has(scope));
};

/** The first dependency missing from `scopes`, if any. */
export function missingDependency(scopes: readonly string[]): { scope: Scope; needs: Scope } | undefined {
  const held = new Set(scopes);
  for (const scope of scopes) {
    if (!isScope(scope)) continue;
    const needs = (SCOPE_DEPENDENCIES.get(scope) ?? []).find((dependency) => !held.has(dependency));
    if (needs) return { scope, needs };
  }
  return undefined;
}

/** Whether the granted scopes satisfy an operation's alternatives (any one whole alternative). */
export const satisfiesAny = (granted: ReadonlySet<string>, alternatives: readonly (readonly string[])[]): boolean =>
  alternatives.length === 0 || alternatives.some((alternative) => alternative.every((scope) => granted.has(scope)));

/** Drops every scope whose dependency is not kept too (an owner may untick an optional scope another needs). */
export function withDependenciesMet(scopes: readonly string[]): string[] {
  let kept = [...scopes];
  for (;;) {
    const gap = missingDependency(kept);
    if (!gap) return kept;
    kept = kept.filter((scope) => scope !== gap.scope);
  }
}
