/**
 * The scope catalogue in @svc/contract is generated from the spec's oauth2 security scheme: it must
 * say exactly what the scheme says, and the docs must still tell a reader which scope needs which.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { SCOPE_DEPENDENCIES, scopeCatalogue } from '../src';
import { type JsonObject, resolve, spec } from './spec-helpers';

type SchemeSource = { flows: { authorizationCode: { scopes: Record<string, string> } }; 'x-scope-dependencies': Record<string, string[]> };

const schemeFile = path.join(__dirname, '..', '..', '..', 'spec', 'components', 'securitySchemes', 'oauth2.yaml');
const source = parse(fs.readFileSync(schemeFile, 'utf8')) as SchemeSource;
const declared = source.flows.authorizationCode.scopes;
const dependencies = source['x-scope-dependencies'];

describe('the generated scope catalogue', () => {
  it('lists every scope of the spec, in its order, with its description', () => {
    expect(scopeCatalogue.map(({ name, description }) => [name, description])).toEqual(Object.entries(declared));
  });

  it("gives each scope the spec's dependencies, and none to the others", () => {
    expect(Object.fromEntries(scopeCatalogue.filter((scope) => scope.needs.length > 0).map((scope) => [scope.name, scope.needs]))).toEqual(dependencies);
    expect(Object.fromEntries(SCOPE_DEPENDENCIES)).toEqual(dependencies);
  });

  it('answers no lookup of a name that is not a scope through a prototype', () => {
    for (const name of ['constructor', '__proto__', 'toString']) expect(SCOPE_DEPENDENCIES.has(name as never)).toBe(false);
  });
});

describe("the spec's scope catalogue", () => {
  it('has dependencies only between declared scopes', () => {
    for (const [scope, needs] of Object.entries(dependencies)) {
      expect(Object.keys(declared)).toContain(scope);
      for (const need of needs) expect(Object.keys(declared)).toContain(need);
    }
  });

  it('keeps dependencies out of the descriptions (the consent page shows them as they are)', () => {
    for (const description of Object.values(declared)) {
      expect(description).not.toMatch(/\bneeds\b/i);
      expect(description).not.toMatch(/\b[a-z]+(\.[a-z]+)*:(read|write)\b/);
    }
  });

  it('matches the scopes /me may answer (Me.scopes), in the same order', () => {
    const me = resolve({ $ref: '#/components/schemas/Me' });
    expect(((me.properties as JsonObject).scopes as JsonObject).items).toMatchObject({ enum: Object.keys(declared) });
  });

  it('shows the dependencies in the bundled scheme description, one table row per scope that needs others', () => {
    const scheme = resolve(((spec.components as JsonObject).securitySchemes as JsonObject).oauth2);
    const rows = [...String(scheme.description).matchAll(/^\| `([^`]+)` \| (.+) \|$/gm)].map((row) => [
      row[1],
      [...(row[2] as string).matchAll(/`([^`]+)`/g)].map((need) => need[1]),
    ]);
    expect(Object.fromEntries(rows)).toEqual(dependencies);
    expect(scheme['x-scope-dependencies']).toEqual(dependencies);
  });
});
