/**
 * The server's layers, bottom to top. A module may import from its own layer and the layers below
 * it, never from one above (docs and the README's layout section explain each layer). `pnpm lint`
 * runs this, so an upward import fails CI. `delivery` is the webhook wing: all of sending, above
 * the domain whose subscriptions, payloads and queues it sends from, below the edge and the jobs.
 */
const src = '^packages/server/src/';
const layers = [
  ['core', 'core/'],
  ['db', 'db/'],
  ['credentials', 'credentials/'],
  ['services', 'services/'],
  ['platform', 'platform/'],
  ['oauth', 'oauth/'],
  ['domain', 'domain/'],
  ['delivery', 'delivery/'],
  ['http', 'http/'],
  ['dashboard', 'dashboard/'],
  ['handlers', 'handlers/'],
  ['jobs', 'jobs/'],
  ['runtime', 'runtime/'],
  ['app', '(app\\.ts|main\\.ts|server\\.ts|cli/|seeds/|generated/)'],
];

const forbidden = layers.slice(0, -1).map(([name, path], index) => {
  const above = layers.slice(index + 1).map(([, abovePath]) => abovePath);
  return {
    name: `layer-${name}`,
    comment: `${name} is below ${layers
      .slice(index + 1)
      .map(([n]) => n)
      .join(', ')}: it may not import from them.`,
    severity: 'error',
    from: { path: `${src}${path}` },
    to: { path: `${src}(${above.join('|')})` },
  };
});

/** Every module of src/ belongs to a layer. */
forbidden.push({
  name: 'layer-unassigned',
  comment: 'Every module of packages/server/src belongs to one of the layers listed in .dependency-cruiser.cjs.',
  severity: 'error',
  from: { path: `${src}`, pathNot: `${src}(${layers.map(([, path]) => path).join('|')})` },
  to: {},
});

forbidden.push({
  name: 'no-circular',
  comment: 'Modules do not import each other in a circle.',
  severity: 'error',
  from: { path: src },
  to: { circular: true },
});

module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    exclude: { path: '(^|/)(node_modules|test)/' },
  },
};
