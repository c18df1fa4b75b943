/**
 * Every schema of the bundled spec is closed and bounded, and every example validates.
 * The closed/bounded checks are also Spectral rules run by `pnpm lint` (.spectral.yaml:
 * svc-closed-objects, svc-bounded-strings, svc-bounded-arrays, through
 * tools/spectral/functions/svcSchemas.js, which walks the same schemas as allSchemas below);
 * spec-lint.test.ts shows those rules fail a broken bundle. Keep the two definitions in step.
 */
import { isObject, type Json, type JsonObject, resolve, spec, specValidator } from './spec-helpers';

interface Located<T> {
  where: string;
  node: T;
}

/** Every schema reachable from the document: components, parameters, headers, media types. */
function allSchemas(): Located<JsonObject>[] {
  const found: Located<JsonObject>[] = [];
  const visitSchema = (node: Json | undefined, where: string) => {
    if (!isObject(node) || typeof node.$ref === 'string') return;
    found.push({ where, node });
    for (const key of ['items', 'not', 'additionalProperties', 'propertyNames', 'contains'] as const) visitSchema(node[key], `${where}/${key}`);
    for (const key of ['oneOf', 'anyOf', 'allOf', 'prefixItems'] as const) {
      const list = node[key];
      if (Array.isArray(list)) for (const [i, item] of list.entries()) visitSchema(item, `${where}/${key}/${i}`);
    }
    if (isObject(node.properties)) for (const [name, property] of Object.entries(node.properties)) visitSchema(property, `${where}/properties/${name}`);
  };
  const visitDocument = (node: Json | undefined, where: string) => {
    if (Array.isArray(node)) for (const [i, item] of node.entries()) visitDocument(item, `${where}/${i}`);
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'schema') visitSchema(value, `${where}/schema`);
      else if (key === 'schemas' && where === '/components' && isObject(value)) {
        for (const [name, schema] of Object.entries(value)) visitSchema(schema, `/components/schemas/${name}`);
      } else if (key !== 'examples' && key !== 'example') visitDocument(value, `${where}/${key}`);
    }
  };
  visitDocument(spec, '');
  return found;
}

const schemas = allSchemas();
const typesOf = (schema: JsonObject): string[] =>
  Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : [];

describe('schemas', () => {
  it('are many (the walk reaches the whole document)', () => {
    expect(schemas.length).toBeGreaterThan(500);
  });

  it('every object schema is closed', () => {
    // Spectral: svc-closed-objects
    const open = schemas
      .filter(({ node }) => typesOf(node).includes('object') || isObject(node.properties))
      .filter(({ node }) => node.additionalProperties === undefined || node.additionalProperties === true)
      .filter(({ node }) => node.unevaluatedProperties !== false)
      .map(({ where }) => where);
    expect(open).toEqual([]);
  });

  it('every string is bounded (maxLength, enum, const, or a bounded format)', () => {
    // Spectral: svc-bounded-strings
    const boundedFormats = new Set(['uuid', 'date', 'date-time']);
    const unbounded = schemas
      .filter(({ node }) => typesOf(node).includes('string'))
      .filter(({ node }) => node.maxLength === undefined && node.enum === undefined && node.const === undefined && !boundedFormats.has(node.format as string))
      .map(({ where }) => where);
    expect(unbounded).toEqual([]);
  });

  it('every array is bounded', () => {
    // Spectral: svc-bounded-arrays
    const unbounded = schemas.filter(({ node }) => typesOf(node).includes('array') && node.maxItems === undefined).map(({ where }) => where);
    expect(unbounded).toEqual([]);
  });
});

/** Every example in the document with the schema it illustrates. */
function allExamples(): Located<{ schema: Json; value: Json }>[] {
  const found: Located<{ schema: Json; value: Json }>[] = [];
  const fromHolder = (holder: JsonObject, schema: Json | undefined, where: string) => {
    if (schema === undefined) return;
    if ('example' in holder) found.push({ where: `${where}/example`, node: { schema, value: holder.example as Json } });
    if (isObject(holder.examples)) {
      for (const [name, example] of Object.entries(holder.examples)) {
        const resolved = resolve(example);
        if ('value' in resolved) found.push({ where: `${where}/examples/${name}`, node: { schema, value: resolved.value as Json } });
      }
    }
  };
  const visit = (node: Json | undefined, where: string) => {
    if (Array.isArray(node)) for (const [i, item] of node.entries()) visit(item, `${where}/${i}`);
    if (!isObject(node)) return;
    if (node.schema !== undefined && (node.in !== undefined || node.examples !== undefined || node.example !== undefined)) {
      fromHolder(node, node.schema, where);
    }
    for (const [key, value] of Object.entries(node)) if (key !== 'examples' && key !== 'example') visit(value, `${where}/${key}`);
  };
  visit(spec.paths, '/paths');
  visit(spec.webhooks, '/webhooks');
  visit(spec.components, '/components');
  for (const { where, node } of schemas) {
    if (Array.isArray(node.examples))
      for (const [i, value] of node.examples.entries()) found.push({ where: `${where}/examples/${i}`, node: { schema: node, value } });
  }
  return found;
}

describe('examples', () => {
  const examples = allExamples();
  const validator = specValidator();

  it('exist for every request body and every success response of every operation', () => {
    const missing: string[] = [];
    for (const [path, pathItem] of Object.entries(spec.paths as JsonObject)) {
      for (const [method, operation] of Object.entries(resolve(pathItem))) {
        if (!isObject(operation) || !operation.responses) continue;
        const bodies = operation.requestBody ? Object.entries(resolve(operation.requestBody).content as JsonObject) : [];
        for (const [type, media] of bodies) if (!isObject((media as JsonObject).examples)) missing.push(`${method} ${path} request ${type}`);
        for (const [status, response] of Object.entries(operation.responses as JsonObject)) {
          const content = resolve(response).content as JsonObject | undefined;
          if (!/^2/.test(status) || !content) continue;
          for (const [type, media] of Object.entries(content))
            if (!isObject((media as JsonObject).examples)) missing.push(`${method} ${path} ${status} ${type}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('are many', () => {
    expect(examples.length).toBeGreaterThan(300);
  });

  it('every example validates against its schema', () => {
    const failures = examples
      .map(({ where, node }) => ({ where, errors: validator.validate(node.schema, node.value) }))
      .filter(({ errors }) => errors.length > 0);
    expect(failures).toEqual([]);
  });

  it('the validator really rejects a wrong example (the check can fail)', () => {
    expect(validator.validate({ $ref: '#/components/schemas/Product' }, { id: 1 })).not.toEqual([]);
    expect(validator.validate({ $ref: '#/components/schemas/Money' }, '1.5')).not.toEqual([]);
  });
});
