import { resolveLocalRef } from '../../packages/contract/src/refs';
import type { OpenApiDocument } from './bundle';

/** One scope as the spec declares it: the oauth2 scheme's description and `x-scope-dependencies` entry. */
export interface ScopeDefinition {
  readonly name: string;
  readonly description: string;
  /** Scopes that must be requested with this one. */
  readonly needs: readonly string[];
}

const SCHEME = 'oauth2';
const DEPENDENCIES = 'x-scope-dependencies';
const WHERE = `components.securitySchemes.${SCHEME}`;

/** A spec whose scope catalogue cannot be generated; the message names the place in the spec. */
export class ScopeCatalogueError extends Error {
  override readonly name = 'ScopeCatalogueError';
}

type Scheme = {
  description?: unknown;
  flows?: { authorizationCode?: { scopes?: unknown } };
  [DEPENDENCIES]?: unknown;
};

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function schemeOf(document: OpenApiDocument): Scheme {
  const scheme = resolveLocalRef<unknown>(document, document.components.securitySchemes?.[SCHEME]);
  if (!isRecord(scheme)) throw new ScopeCatalogueError(`${WHERE} is missing.`);
  return scheme as Scheme;
}

function declaredScopes(scheme: Scheme): Map<string, string> {
  const scopes = scheme.flows?.authorizationCode?.scopes;
  if (!isRecord(scopes) || Object.keys(scopes).length === 0) {
    throw new ScopeCatalogueError(`${WHERE}.flows.authorizationCode.scopes must map each scope to its description.`);
  }
  const declared = new Map<string, string>();
  for (const [name, description] of Object.entries(scopes)) {
    if (typeof description !== 'string' || description.trim() === '') throw new ScopeCatalogueError(`The scope ${name} has no description.`);
    declared.set(name, description);
  }
  return declared;
}

function dependenciesOf(scheme: Scheme, declared: ReadonlyMap<string, string>): Map<string, string[]> {
  const listed = scheme[DEPENDENCIES] ?? {};
  if (!isRecord(listed)) throw new ScopeCatalogueError(`${WHERE}.${DEPENDENCIES} must map scopes to the scopes they need.`);
  const dependencies = new Map<string, string[]>();
  for (const [scope, needs] of Object.entries(listed)) {
    const at = `${WHERE}.${DEPENDENCIES}.${scope}`;
    if (!declared.has(scope)) throw new ScopeCatalogueError(`${at}: ${scope} is not a declared scope.`);
    if (!Array.isArray(needs) || needs.length === 0 || !needs.every((need): need is string => typeof need === 'string')) {
      throw new ScopeCatalogueError(`${at} must be a non-empty list of scopes.`);
    }
    const undeclared = needs.find((need) => !declared.has(need));
    if (undeclared !== undefined) throw new ScopeCatalogueError(`${at}: ${scope} needs ${undeclared}, which is not a declared scope.`);
    if (new Set(needs).size !== needs.length) throw new ScopeCatalogueError(`${at} names a scope twice.`);
    dependencies.set(scope, needs);
  }
  return dependencies;
}

/** The first dependency cycle found (`[a, b, a]`), walking scopes and their needs in the spec's order. */
function findCycle(scopes: readonly string[], dependencies: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (scope: string): string[] | undefined => {
    const open = path.indexOf(scope);
    if (open >= 0) return [...path.slice(open), scope];
    if (done.has(scope)) return undefined;
    path.push(scope);
    for (const need of dependencies.get(scope) ?? []) {
      const cycle = visit(need);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(scope);
    return undefined;
  };
  for (const scope of scopes) {
    const cycle = visit(scope);
    if (cycle) return cycle;
  }
  return undefined;
}

/**
 * The scope catalogue in the spec's order. Refuses a dependency on (or of) an undeclared scope, which
 * no request could satisfy, and a dependency cycle, whose scopes could only ever be granted together:
 * one scope written as several, a mistake in the spec rather than a rule to enforce.
 */
export function readScopeCatalogue(document: OpenApiDocument): ScopeDefinition[] {
  const scheme = schemeOf(document);
  const declared = declaredScopes(scheme);
  const dependencies = dependenciesOf(scheme, declared);
  const cycle = findCycle([...declared.keys()], dependencies);
  if (cycle) throw new ScopeCatalogueError(`${WHERE}.${DEPENDENCIES} has a cycle: ${cycle.join(' → ')}.`);
  return [...declared].map(([name, description]) => ({ name, description, needs: dependencies.get(name) ?? [] }));
}

const code = (scope: string) => `\`${scope}\``;

/**
 * The bundled document with the dependencies written out as a table in the oauth2 scheme's
 * description: documentation renderers do not show vendor extensions, and readers of the API
 * reference need to know which scope needs which.
 */
export function withScopeDependencyTable(document: OpenApiDocument, catalogue: readonly ScopeDefinition[]): OpenApiDocument {
  const dependent = catalogue.filter((scope) => scope.needs.length > 0);
  if (dependent.length === 0) return document;
  const scheme = schemeOf(document);
  const rows = dependent.map((scope) => `| ${code(scope.name)} | ${scope.needs.map(code).join(', ')} |`);
  const table = [
    '**Scope dependencies.** A scope in the first column must be requested together with the scopes',
    'it needs (`SCOPE_DEPENDENCIES_MUST_BE_VISIBLE` at `/oauth/authorize` otherwise); a scope not',
    'listed needs no other.',
    '',
    '| Scope | Needs |',
    '|---|---|',
    ...rows,
  ].join('\n');
  const description = typeof scheme.description === 'string' ? `${scheme.description.trimEnd()}\n\n` : '';
  const securitySchemes = { ...document.components.securitySchemes, [SCHEME]: { ...scheme, description: `${description}${table}\n` } };
  return { ...document, components: { ...document.components, securitySchemes } };
}
