import { ALL_SCOPES, describeScope, isScope, missingDependency, sortScopes, withDependenciesMet } from '../../src/platform/scopes';
import { specScopeDependencies, specScopeDescriptions } from '../support/spec-scopes';

/** Names that an object literal would answer for through its prototype. */
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'prototype'];

describe('the scope catalogue on the server', () => {
  it('holds exactly the scopes the spec declares, in the order of the spec', () => {
    expect(ALL_SCOPES).toEqual([...specScopeDescriptions.keys()]);
  });

  it.each([...specScopeDescriptions])('%s is a scope described as the spec describes it', (scope, description) => {
    expect(isScope(scope)).toBe(true);
    expect(describeScope(scope)).toBe(description);
  });

  it.each([...PROTOTYPE_NAMES, 'products:delete', '', 'PRODUCTS:READ'])('%j is not a scope and is described by its name only', (name) => {
    expect(isScope(name)).toBe(false);
    expect(describeScope(name)).toBe(name);
  });

  it('sorts into the order of the spec, each scope once, leaving out what is not a scope', () => {
    expect(sortScopes(['products:read', 'orders:read', 'constructor', 'analytics:read', 'orders:read', '__proto__'])).toEqual([
      'analytics:read',
      'orders:read',
      'products:read',
    ]);
  });
});

describe('scope dependencies on the server', () => {
  it.each([...specScopeDependencies])('%s needs %j, as the spec says', (scope, needs) => {
    for (const need of needs) expect(missingDependency([scope, ...needs.filter((other) => other !== need)])).toEqual({ scope, needs: need });
    // The scopes it needs may need others in turn (pages:write needs pages:read): only the scope itself is judged here.
    expect(missingDependency([scope, ...needs])?.scope).not.toBe(scope);
  });

  it('a scope the spec gives no dependency needs nothing', () => {
    for (const scope of ALL_SCOPES.filter((name) => !specScopeDependencies.has(name))) expect(missingDependency([scope])).toBeUndefined();
  });

  it('names that are not scopes, prototype names among them, need nothing and satisfy nothing', () => {
    expect(missingDependency(PROTOTYPE_NAMES)).toBeUndefined();
    expect(missingDependency(['products:write', ...PROTOTYPE_NAMES])).toEqual({ scope: 'products:write', needs: 'products:read' });
  });

  it('keeping only scopes whose dependencies are kept follows chains (pages.publish:write needs pages:write, which needs pages:read)', () => {
    expect(withDependenciesMet(['pages.publish:write', 'pages:write', 'orders:read'])).toEqual(['orders:read']);
    expect(withDependenciesMet(['pages.publish:write', 'pages:write', 'pages:read'])).toEqual(['pages.publish:write', 'pages:write', 'pages:read']);
  });
});
