import path from 'node:path';
import type { OpenApiDocument } from './bundle';
import type { OperationEntry } from './operation-table';
import { GENERATED_HEADER, locations } from './paths';
import type { ScopeDefinition } from './scopes';

/** `products.media.get` → `productsMediaGet`. */
export function identifierOf(operationId: string): string {
  return operationId.replace(/[._-]+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Where an operation's hand-written handler module lives, e.g. `handlers/products/products.list.ts`. */
export function handlerFileOf(operationId: string): string {
  const group = operationId.split('.')[0] ?? operationId;
  return path.join(locations.serverHandlersDir, group, `${operationId}.ts`);
}

function importPath(from: string, to: string): string {
  const relative = path.relative(path.dirname(from), to).replace(/\\/g, '/').replace(/\.ts$/, '');
  return relative.startsWith('.') ? relative : `./${relative}`;
}

export async function contractTypes(document: OpenApiDocument): Promise<string> {
  // Loaded here, not at the top: its dependencies are ES modules that jest (which tests the other emitters) cannot load.
  const { default: openapiTS, astToString } = await import('openapi-typescript');
  const ast = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], {
    alphabetize: true,
    exportType: true,
    // A property with a default is optional where the spec says so: requests leave it out and get the
    // default. openapi-typescript's default would make it required in request bodies too.
    defaultNonNullable: false,
  });
  return `${GENERATED_HEADER}/* eslint-disable */\n${astToString(ast)}`;
}

export function contractOperations(table: OperationEntry[]): string {
  const body = table.map((entry) => `  ${JSON.stringify(entry.operationId)}: ${JSON.stringify(entry)},`).join('\n');
  return `${GENERATED_HEADER}import type { OperationEntry } from '../operation';

/** Every operation of the store API and the OAuth server, keyed by operationId. */
export const operationTable = {
${body}
} as const satisfies Record<string, OperationEntry>;

export type OperationId = keyof typeof operationTable;

export const operationIds = Object.keys(operationTable) as OperationId[];
`;
}

export function contractScopes(catalogue: readonly ScopeDefinition[]): string {
  const union = catalogue.map((scope) => `  | ${JSON.stringify(scope.name)}`).join('\n');
  const entries = catalogue
    .map((scope) => `  { name: ${JSON.stringify(scope.name)}, description: ${JSON.stringify(scope.description)}, needs: ${JSON.stringify(scope.needs)} },`)
    .join('\n');
  return `${GENERATED_HEADER}/** An OAuth scope, as the oauth2 security scheme declares it. */
export type Scope =
${union};

export interface ScopeDefinition {
  readonly name: Scope;
  /** What the scope allows, worded for the API reference and the consent page alike. */
  readonly description: string;
  /** The scopes that must be requested with it (\`x-scope-dependencies\`). */
  readonly needs: readonly Scope[];
}

/** Every scope in the spec's order, which is the order the service lists scopes in. */
export const scopeCatalogue: readonly ScopeDefinition[] = [
${entries}
];

/** The scopes each scope needs, for the scopes that need any. A Map: a requested name never reaches a prototype. */
export const SCOPE_DEPENDENCIES: ReadonlyMap<Scope, readonly Scope[]> = new Map(
  scopeCatalogue.filter((scope) => scope.needs.length > 0).map((scope) => [scope.name, scope.needs]),
);
`;
}

export function serverRegistry(table: OperationEntry[]): string {
  const imports = table
    .map((e) => `import ${identifierOf(e.operationId)} from '${importPath(locations.serverRegistry, handlerFileOf(e.operationId))}';`)
    .join('\n');
  const entries = table.map((e) => `  ${JSON.stringify(e.operationId)}: ${identifierOf(e.operationId)},`).join('\n');
  return `${GENERATED_HEADER}import type { Handlers } from '../http/handler';
${imports}

export const handlers: Handlers = {
${entries}
};
`;
}

export function clientTypes(document: OpenApiDocument): string {
  const names = Object.keys(document.components.schemas ?? {}).sort();
  const aliases = names.map((name) => `export type ${name} = components['schemas']['${name}'];`).join('\n');
  return `${GENERATED_HEADER}import type { components } from '@svc/contract';

export type { components, operations, paths, webhooks } from '@svc/contract';

${aliases}
`;
}

/** The module a new operation starts with: a typed stub that answers 501 until it is built. */
export function handlerStub(entry: OperationEntry): string {
  const helper = importPath(handlerFileOf(entry.operationId), path.join(locations.serverHandlersDir, '..', 'http', 'handler.ts'));
  return `import { notImplemented } from '${helper}';

/** \`${entry.operationId}\`: ${entry.method.toUpperCase()} ${entry.path}. Not built yet: answers 501 NOT_IMPLEMENTED. */
export default notImplemented('${entry.operationId}');
`;
}
