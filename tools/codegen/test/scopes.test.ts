import vm from 'node:vm';
import ts from 'typescript';
import type { OpenApiDocument } from '../bundle';
import { contractScopes } from '../emit';
import { readScopeCatalogue, ScopeCatalogueError, type ScopeDefinition, withScopeDependencyTable } from '../scopes';

/** A bundled document whose oauth2 scheme declares `scopes` (in that order) and, if given, `x-scope-dependencies`. */
function documentWith(scopes: Record<string, string>, dependencies?: unknown): OpenApiDocument {
  const oauth2 = {
    type: 'oauth2',
    description: 'Tokens.\n',
    flows: { authorizationCode: { authorizationUrl: '/oauth/authorize', tokenUrl: '/oauth/token', scopes } },
    ...(dependencies === undefined ? {} : { 'x-scope-dependencies': dependencies }),
  };
  return { openapi: '3.1.0', paths: {}, components: { securitySchemes: { oauth2 } } };
}

const SCOPES = { 'b:read': 'Read b things.', 'a:read': 'Read a things.', 'a:write': 'Write a things.', 'a.admin:write': 'Administer a things.' };

const refusal = (document: OpenApiDocument): string => {
  try {
    readScopeCatalogue(document);
  } catch (error) {
    if (error instanceof ScopeCatalogueError) return error.message;
    throw error;
  }
  throw new Error('the catalogue was generated');
};

describe('reading the scope catalogue', () => {
  it('keeps the order of the spec, each description, and each scope its dependencies', () => {
    expect(readScopeCatalogue(documentWith(SCOPES, { 'a.admin:write': ['a:write'], 'a:write': ['a:read', 'b:read'] }))).toEqual([
      { name: 'b:read', description: 'Read b things.', needs: [] },
      { name: 'a:read', description: 'Read a things.', needs: [] },
      { name: 'a:write', description: 'Write a things.', needs: ['a:read', 'b:read'] },
      { name: 'a.admin:write', description: 'Administer a things.', needs: ['a:write'] },
    ]);
  });

  it('takes a scheme without x-scope-dependencies as scopes that need nothing', () => {
    expect(readScopeCatalogue(documentWith(SCOPES)).every((scope) => scope.needs.length === 0)).toBe(true);
  });

  it('accepts two paths to the same dependency (not a cycle)', () => {
    const diamond = { 'a.admin:write': ['a:write', 'a:read'], 'a:write': ['a:read'] };
    expect(readScopeCatalogue(documentWith(SCOPES, diamond)).map((scope) => scope.needs)).toEqual([[], [], ['a:read'], ['a:write', 'a:read']]);
  });

  it('refuses a dependency on a scope the scheme does not declare, naming both', () => {
    expect(refusal(documentWith(SCOPES, { 'a:write': ['a:read', 'c:read'] }))).toBe(
      'components.securitySchemes.oauth2.x-scope-dependencies.a:write: a:write needs c:read, which is not a declared scope.',
    );
  });

  it('refuses dependencies of a scope the scheme does not declare', () => {
    expect(refusal(documentWith(SCOPES, { 'c:write': ['a:read'] }))).toMatch(/x-scope-dependencies\.c:write: c:write is not a declared scope/);
  });

  it.each([
    ['two scopes', { 'a:read': ['a:write'], 'a:write': ['a:read'] }, 'a:read → a:write → a:read'],
    ['a scope and itself', { 'a:write': ['a:write'] }, 'a:write → a:write'],
    ['three scopes', { 'a:read': ['b:read'], 'b:read': ['a.admin:write'], 'a.admin:write': ['a:read'] }, 'b:read → a.admin:write → a:read → b:read'],
  ])('refuses a dependency cycle of %s, showing the cycle', (_case, dependencies, cycle) => {
    expect(refusal(documentWith(SCOPES, dependencies))).toBe(`components.securitySchemes.oauth2.x-scope-dependencies has a cycle: ${cycle}.`);
  });

  it.each([
    ['not a map', ['a:read']],
    ['a list that is empty', { 'a:write': [] }],
    ['a list that is a string', { 'a:write': 'a:read' }],
    ['a list with a number', { 'a:write': [1] }],
    ['a list naming a scope twice', { 'a:write': ['a:read', 'a:read'] }],
  ])('refuses x-scope-dependencies that is %s', (_case, dependencies) => {
    expect(refusal(documentWith(SCOPES, dependencies))).toMatch(/^components\.securitySchemes\.oauth2\.x-scope-dependencies/);
  });

  it('refuses a scope without a description, and a document without the oauth2 scheme or its scopes', () => {
    expect(refusal(documentWith({ ...SCOPES, 'c:read': ' ' }))).toBe('The scope c:read has no description.');
    expect(refusal({ openapi: '3.1.0', paths: {}, components: { securitySchemes: {} } })).toBe('components.securitySchemes.oauth2 is missing.');
    expect(refusal(documentWith({}))).toMatch(/flows\.authorizationCode\.scopes must map each scope to its description/);
  });

  it('reads the scheme through a reference', () => {
    const direct = documentWith(SCOPES, { 'a:write': ['a:read'] });
    const referenced = {
      ...direct,
      components: { securitySchemes: { oauth2: { $ref: '#/x-schemes/oauth2' } } },
      'x-schemes': direct.components.securitySchemes,
    };
    expect(readScopeCatalogue(referenced)).toEqual(readScopeCatalogue(direct));
  });
});

describe('the dependency table in the bundled document', () => {
  it('is appended to the scheme description, one row per scope that needs others, in the order of the spec', () => {
    const document = documentWith(SCOPES, { 'a.admin:write': ['a:write'], 'a:write': ['a:read', 'b:read'] });
    const scheme = withScopeDependencyTable(document, readScopeCatalogue(document)).components.securitySchemes?.oauth2 as { description: string };
    expect(scheme.description.startsWith('Tokens.\n\n')).toBe(true);
    expect(scheme.description).toContain('| Scope | Needs |\n|---|---|\n| `a:write` | `a:read`, `b:read` |\n| `a.admin:write` | `a:write` |\n');
  });

  it('leaves the document alone when no scope needs another, and never changes the document it is given', () => {
    const plain = documentWith(SCOPES);
    expect(withScopeDependencyTable(plain, readScopeCatalogue(plain))).toBe(plain);
    const dependent = documentWith(SCOPES, { 'a:write': ['a:read'] });
    const before = JSON.stringify(dependent);
    withScopeDependencyTable(dependent, readScopeCatalogue(dependent));
    expect(JSON.stringify(dependent)).toBe(before);
  });
});

describe('the emitted catalogue module', () => {
  /** Compiles and runs the emitted TypeScript, as the contract package would load it. */
  function load(source: string): { scopeCatalogue: ScopeDefinition[]; SCOPE_DEPENDENCIES: Map<string, string[]> } {
    const compilerOptions = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 };
    const { outputText, diagnostics = [] } = ts.transpileModule(source, { compilerOptions, reportDiagnostics: true });
    expect(diagnostics.map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))).toEqual([]);
    const module = { exports: {} as Record<string, unknown> };
    vm.runInNewContext(outputText, { module, exports: module.exports, Map });
    return module.exports as ReturnType<typeof load>;
  }

  it('holds every scope with its description and dependencies, text with quotes and backslashes intact', () => {
    const catalogue: ScopeDefinition[] = [
      { name: 'a:read', description: 'Read the "a" things, the owner\'s \\ all of them.', needs: [] },
      { name: 'a:write', description: 'Write a things.\nAll of them.', needs: ['a:read'] },
    ];
    const emitted = load(contractScopes(catalogue));
    expect(emitted.scopeCatalogue).toEqual(catalogue);
    expect([...emitted.SCOPE_DEPENDENCIES]).toEqual([['a:write', ['a:read']]]);
  });

  it('types Scope as the union of the declared names', () => {
    const source = contractScopes([
      { name: 'a:read', description: 'Read a things.', needs: [] },
      { name: 'a:write', description: 'Write a things.', needs: ['a:read'] },
    ]);
    expect(source).toContain('export type Scope =\n  | "a:read"\n  | "a:write";');
  });
});
