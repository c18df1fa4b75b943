/**
 * Spectral function for the spec's schema conventions (spec/README.md, "Conventions").
 *
 * The rules that use it run on the unresolved document (`resolved: false`) with the givens
 * `$.components.schemas[*]` and `$..schema`, so a `$ref` is never followed and a schema is
 * reported where it is defined. This function keeps the same schemas as
 * packages/contract/test/schemas.test.ts: a `schema` key counts as a root unless it lies in an
 * example or inside another schema (a schema's subschemas are reached by the walk below), and
 * the walk descends items, not, additionalProperties, propertyNames, contains, oneOf, anyOf,
 * allOf, prefixItems and properties, stopping at `$ref`s.
 *
 * functionOptions: { check: 'closed-objects' | 'bounded-strings' | 'bounded-arrays' }
 * CommonJS; Spectral's ruleset bundler loads it from `functionsDir`.
 */

const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const typesOf = (schema) => (Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : []);

const BOUNDED_FORMATS = new Set(['uuid', 'date', 'date-time']);

/** Each check says whether a schema breaks the convention. */
const CHECKS = {
  'closed-objects': (schema) =>
    (typesOf(schema).includes('object') || isObject(schema.properties)) &&
    (schema.additionalProperties === undefined || schema.additionalProperties === true) &&
    schema.unevaluatedProperties !== false,
  'bounded-strings': (schema) =>
    typesOf(schema).includes('string') &&
    schema.maxLength === undefined &&
    schema.enum === undefined &&
    schema.const === undefined &&
    !BOUNDED_FORMATS.has(schema.format),
  'bounded-arrays': (schema) => typesOf(schema).includes('array') && schema.maxItems === undefined,
};

const MESSAGES = {
  'closed-objects': 'Object schema is open: set `additionalProperties: false` or `unevaluatedProperties: false` (convention: every object schema is closed).',
  'bounded-strings': 'String schema is unbounded: set `maxLength`, `enum`, `const`, or format uuid/date/date-time (convention: every string is bounded).',
  'bounded-arrays': 'Array schema is unbounded: set `maxItems` (convention: every array is bounded).',
};

const SINGLE = ['items', 'not', 'additionalProperties', 'propertyNames', 'contains'];
const LISTS = ['oneOf', 'anyOf', 'allOf', 'prefixItems'];

/** Where a schema walk starts: a component schema, or a `schema` key outside examples and schemas. */
function isRoot(path) {
  if (path.length === 3 && path[0] === 'components' && path[1] === 'schemas') return true;
  if (path[path.length - 1] !== 'schema') return false;
  if (path[0] === 'components' && path[1] === 'schemas') return false;
  return !path.slice(0, -1).some((key) => key === 'schema' || key === 'example' || key === 'examples');
}

function walk(schema, path, visit) {
  if (!isObject(schema) || typeof schema.$ref === 'string') return;
  visit(schema, path);
  for (const key of SINGLE) walk(schema[key], [...path, key], visit);
  for (const key of LISTS) if (Array.isArray(schema[key])) for (const [i, item] of schema[key].entries()) walk(item, [...path, key, i], visit);
  if (isObject(schema.properties)) for (const [name, property] of Object.entries(schema.properties)) walk(property, [...path, 'properties', name], visit);
}

module.exports = function svcSchemas(targetVal, options, context) {
  const check = CHECKS[options?.check];
  if (!check) throw new Error(`svcSchemas: unknown check ${JSON.stringify(options?.check)}; expected one of ${Object.keys(CHECKS).join(', ')}`);
  if (!isRoot(context.path)) return [];
  const results = [];
  walk(targetVal, [...context.path], (schema, path) => {
    if (check(schema)) results.push({ message: MESSAGES[options.check], path });
  });
  return results;
};
