import type { components } from '@svc/contract';

export type Scope = components['schemas']['Me']['scopes'][number];

/** Every scope, in words for the consent page. `satisfies` keeps this in step with the spec's list. */
export const SCOPE_DESCRIPTIONS = {
  'analytics:read': 'See all sales analytics',
  'analytics.overview:read': 'See the sales overview',
  'analytics.sales:read': 'See sales per day',
  'analytics.products:read': 'See sales by product',
  'analytics.categories:read': 'See sales by category',
  'carts:read': 'See abandoned carts',
  'categories:read': 'See categories',
  'categories:write': 'Create and change categories',
  'coupons:read': 'See coupons',
  'coupons.status:write': 'Turn coupons on and off',
  'customers:read': 'See customers',
  'inventory:read': 'See stock levels',
  'inventory:write': 'Adjust stock levels',
  'orders:read': 'See orders',
  'orders.digital:read': 'See the digital items (codes and files) delivered with orders',
  'pages:read': 'See pages',
  'pages:write': 'Create and edit pages',
  'pages.publish:write': 'Publish and hide pages',
  'pages.delete:write': 'Delete pages',
  'payments:read': 'See payments',
  'products:read': 'See products',
  'products:write': 'Create and edit products',
  'products.prices:read': 'See product prices',
  'products.prices:write': 'Change product prices',
  'products.media:read': 'See product images',
  'products.media:write': 'Change product images',
  'products.seo:read': 'See product SEO settings',
  'products.seo:write': 'Change product SEO settings',
  'reviews:read': 'See product reviews',
  'reviews.moderation:write': 'Publish and hide product reviews',
} as const satisfies Record<Scope, string>;

export const ALL_SCOPES = Object.keys(SCOPE_DESCRIPTIONS) as Scope[];

/** DESIGN.md § 6: a scope needs these requested too (a narrower write needs the read it acts on). */
export const SCOPE_DEPENDENCIES: Readonly<Partial<Record<Scope, readonly Scope[]>>> = {
  'orders.digital:read': ['orders:read'],
  'products:write': ['products:read'],
  'products.prices:write': ['products.prices:read'],
  'products.media:write': ['products.media:read'],
  'products.seo:write': ['products.seo:read'],
  'categories:write': ['categories:read'],
  'inventory:write': ['inventory:read'],
  'pages:write': ['pages:read'],
  'pages.publish:write': ['pages:write'],
  'pages.delete:write': ['pages:write'],
  'coupons.status:write': ['coupons:read'],
  'reviews.moderation:write': ['reviews:read'],
};

export const isScope = (value: string): value is Scope => Object.hasOwn(SCOPE_DESCRIPTIONS, value);

/** Scopes in the catalogue's order, each once: how the service writes scope lists. */
export const sortScopes = (scopes: Iterable<string>): Scope[] => {
  const wanted = new Set(scopes);
  return ALL_SCOPES.filter((scope) => wanted.has(scope));
};

/** The first dependency missing from `scopes`, if any. */
export function missingDependency(scopes: readonly string[]): { scope: Scope; needs: Scope } | undefined {
  const held = new Set(scopes);
  for (const scope of scopes) {
    if (!isScope(scope)) continue;
    const needs = (SCOPE_DEPENDENCIES[scope] ?? []).find((dependency) => !held.has(dependency));
    if (needs) return { scope, needs };
  }
  return undefined;
}

/** Whether the granted scopes satisfy an operation's alternatives (any one whole alternative). */
export const satisfiesAny = (granted: ReadonlySet<string>, alternatives: readonly (readonly string[])[]): boolean =>
  alternatives.length === 0 || alternatives.some((alternative) => alternative.every((scope) => granted.has(scope)));

/** Drops every scope whose dependency is not kept too (an owner may untick an optional scope another needs). */
export function withDependenciesMet(scopes: readonly string[]): string[] {
  let kept = [...scopes];
  for (;;) {
    const gap = missingDependency(kept);
    if (!gap) return kept;
    kept = kept.filter((scope) => scope !== gap.scope);
  }
}
