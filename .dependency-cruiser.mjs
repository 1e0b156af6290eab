/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'platform-imports-no-resource',
      severity: 'error',
      from: { path: '^src/(platform|runtime|lib)/' },
      to: { path: '^src/resources/' },
    },
    {
      name: 'resource-through-index',
      severity: 'error',
      from: { path: '^src/resources/([^/]+)/' },
      to: { path: '^src/resources/[^/]+/', pathNot: ['^src/resources/$1/', '^src/resources/[^/]+/index\\.ts$'] },
    },
    {
      name: 'outside-resource-through-index',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/resources/' },
      to: { path: '^src/resources/[^/]+/', pathNot: '^src/resources/[^/]+/index\\.ts$' },
    },
    {
      name: 'no-cycle',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
  },
};
