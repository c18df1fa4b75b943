import openapiTS, { astToString } from 'openapi-typescript';
import path from 'node:path';
import type { OpenApiDocument } from './bundle';
import type { OperationEntry } from './operation-table';
import { GENERATED_HEADER, locations } from './paths';

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
  const ast = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], {
    alphabetize: true,
    exportType: true,
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
