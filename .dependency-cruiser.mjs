/**
 * Dependencies point down (issue 25, item 2), checked by `npm run lint`:
 *
 *   lib, runtime, platform  <  resources/<name>/  <  resources/index.ts, deps*.ts, config.ts, cli/, app.ts
 *
 * The lower layers name no resource and no part of the composition above them; a resource reaches another
 * only through that resource's index.ts; nothing imports in a cycle. Kinds several resources share (Principal,
 * the sealer, shared wire schemas, git naming rules) live in platform/ so that all may import them.
 *
 * TypeScript is read with @swc/core (TypeScript 7 has no JS API for dependency-cruiser); `.js` specifiers
 * resolve to the `.ts` files by dependency-cruiser's own rule for TypeScript sources. swc does not mark
 * type-only imports, so every import counts, types included.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'platform-imports-no-resource',
      comment: 'lib, runtime and platform import nothing from resources/: a resource registers with them instead.',
      severity: 'error',
      from: { path: '^src/(platform|runtime|lib)/' },
      to: { path: '^src/resources/' },
    },
    {
      name: 'platform-imports-no-composition',
      comment: 'lib, runtime and platform import nothing of the composition above the resources (config.ts, deps, cli, app).',
      severity: 'error',
      from: { path: '^src/(platform|runtime|lib)/' },
      to: { path: '^src/(cli/|[^/]+\\.ts$)' },
    },
    {
      name: 'resource-through-index',
      comment: "A resource imports another resource only through that resource's index.ts.",
      severity: 'error',
      from: { path: '^src/resources/([^/]+)/' },
      to: { path: '^src/resources/[^/]+/', pathNot: ['^src/resources/$1/', '^src/resources/[^/]+/index\\.ts$'] },
    },
    {
      name: 'composition-through-index',
      comment: 'The composition (deps, config, host, resources/index.ts, cli, app, main) also reaches a resource only through its index.ts.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(platform|runtime|lib)/', '^src/resources/[^/]+/'] },
      to: { path: '^src/resources/[^/]+/', pathNot: '^src/resources/[^/]+/index\\.ts$' },
    },
    {
      name: 'no-cycle',
      comment: 'No import cycles.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    includeOnly: '^src/',
    exclude: { path: '\\.d\\.ts$' },
  },
};
