/** A node of a JSON document (an OpenAPI document once parsed). */
export type JsonNode = null | boolean | number | string | JsonNode[] | { [key: string]: JsonNode };

function isReference(node: unknown): node is { $ref: string } {
  return typeof node === 'object' && node !== null && typeof (node as { $ref?: unknown }).$ref === 'string';
}

/**
 * Follows local references (`#/components/schemas/Product`) until a node that is not one.
 * Only local references exist in the bundled document.
 */
export function resolveLocalRef<T = { [key: string]: JsonNode }>(document: unknown, node: unknown): T {
  let current = node;
  for (let hops = 0; isReference(current); hops += 1) {
    if (hops > 32) throw new Error(`Reference loop at ${current.$ref}`);
    if (!current.$ref.startsWith('#/')) throw new Error(`Not a local reference: ${current.$ref}`);
    const target = current.$ref
      .slice(2)
      .split('/')
      .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);
    if (target === undefined) throw new Error(`Unresolved reference ${current.$ref}`);
    current = target;
  }
  return current as T;
}
