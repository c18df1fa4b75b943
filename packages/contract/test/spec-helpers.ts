import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { bundledSpecPath } from '../src/node';
import { resolveLocalRef } from '../src/refs';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const spec = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as JsonObject;
export const interfaceDocument = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'spec', 'source', 'interface.md'), 'utf8');

export const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Follows `#/components/...` references until a non-reference node. */
export function resolve(node: Json | undefined): JsonObject {
  const resolved = resolveLocalRef<Json>(spec, node);
  if (!isObject(resolved)) throw new Error(`not an object: ${JSON.stringify(node)}`);
  return resolved;
}

export interface SpecOperation {
  method: string;
  path: string;
  operation: JsonObject;
  parameters: JsonObject[];
}

export function specOperations(): SpecOperation[] {
  const result: SpecOperation[] = [];
  for (const [pathName, pathItemRef] of Object.entries(spec.paths as JsonObject)) {
    const pathItem = resolve(pathItemRef);
    const shared = ((pathItem.parameters as Json[] | undefined) ?? []).map(resolve);
    for (const method of HTTP_METHODS) {
      const operation = pathItem[method];
      if (!isObject(operation)) continue;
      const own = ((operation.parameters as Json[] | undefined) ?? []).map(resolve);
      result.push({ method, path: pathName, operation, parameters: [...shared, ...own] });
    }
  }
  return result;
}

export function operationById(operationId: string): SpecOperation {
  const found = specOperations().find((o) => o.operation.operationId === operationId);
  if (!found) throw new Error(`no operation ${operationId}`);
  return found;
}

/** An Ajv that knows the whole bundled document, so `#/components/...` references resolve. */
export function specValidator() {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(spec as object, 'spec');
  return {
    validate(schema: Json, value: unknown): string[] {
      const rebased = JSON.parse(JSON.stringify(schema).replace(/"\$ref":"#\//g, '"$ref":"spec#/')) as object;
      const check = ajv.compile(rebased);
      return check(value) ? [] : (check.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
    },
  };
}
