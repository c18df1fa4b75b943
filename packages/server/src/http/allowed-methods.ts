import { type OperationEntry, operationTable } from '@svc/contract';
import { ApiError } from '../core/errors';

/**
 * 405 METHOD_NOT_ALLOWED for a path the interface has, sent a method it does not take there: the
 * methods it takes go in `Allow` (RFC 9110 §15.5.6) and `allowed_methods`, and the message names
 * the path's operations and, below the path, those that take the method sent (a PATCH of a product
 * is one of its sub-resources': `…/content`, `…/prices`, `…/seo`).
 */

const OPERATIONS: readonly OperationEntry[] = Object.values(operationTable as Readonly<Record<string, OperationEntry>>);
/** The longest message the error format takes. */
const MESSAGE_CHARACTERS = 1024;

const segmentsOf = (path: string) => path.split('/').filter((segment) => segment !== '');
const isParameter = (segment: string) => /^\{\w+\}$/.test(segment);

/** Whether a concrete path is an instance of a spec path: `{name}` takes any one segment, any other segment itself. */
function instanceOf(path: readonly string[], template: readonly string[]): boolean {
  return path.length === template.length && template.every((segment, index) => isParameter(segment) || segment === path[index]);
}

/** The spec path a request's path is an instance of; where several are, the one with the most literal segments (`/events/{id}` over nothing). */
export function pathTemplateOf(path: string, templates: readonly string[]): string | undefined {
  const segments = segmentsOf(path);
  const literals = (template: string) => segmentsOf(template).filter((segment) => !isParameter(segment)).length;
  return templates.filter((template) => instanceOf(segments, segmentsOf(template))).sort((a, b) => literals(b) - literals(a))[0];
}

const named = (operation: OperationEntry) => `${operation.method.toUpperCase()} (${operation.operationId})`;

/** The refusal of `method` at `path` by the operations of the interface; undefined when the path is none of its paths. */
export function methodNotAllowed(method: string, path: string, operations: readonly OperationEntry[] = OPERATIONS): ApiError | undefined {
  const template = pathTemplateOf(path, [...new Set(operations.map((operation) => operation.path))]);
  if (template === undefined) return undefined;
  const here = operations.filter((operation) => operation.path === template);
  const allowed = here.map((operation) => operation.method.toUpperCase());
  const sent = method.toUpperCase();
  const below = operations.filter((operation) => operation.method.toUpperCase() === sent && operation.path.startsWith(`${template}/`));
  const elsewhere =
    below.length > 0
      ? ` ${sent} is taken below it, by ${below.map((operation) => `…${operation.path.slice(template.length)} (${operation.operationId})`).join(', ')}.`
      : '';
  const message = `${template} does not take ${sent}: it takes ${here.map(named).join(', ')}.${elsewhere}`;
  return new ApiError('METHOD_NOT_ALLOWED', message.length <= MESSAGE_CHARACTERS ? message : `${message.slice(0, MESSAGE_CHARACTERS - 1)}…`, {
    allowed_methods: allowed,
  });
}
