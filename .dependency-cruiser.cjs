// Import rules (npm run lint:deps): chains depend on core, the API surfaces (GraphQL, REST) depend
// on core, the composition root (src/*.ts) depends on everything, and nothing depends back on it.
// The family list (chains/list.ts, chains/families.ts and each family's spec.ts, data only) is what core, config
// and the API read to derive network types, inputs and shapes; a family's pipeline is reached only
// through the contract core defines (loaded by the list, never imported by name).
const ROOT = '^src/[^/]+\\.ts$';
const FAMILY_LIST = '^src/chains/(families|list|[^/]+/spec)\\.ts$';
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only', 'dynamic-import'] } } },
    { name: 'root-is-top', comment: 'Nothing imports the composition root.', severity: 'error', from: { pathNot: ROOT }, to: { path: ROOT } },
    { name: 'core-is-transport-free', comment: 'Core knows no API surface.', severity: 'error', from: { path: '^src/core/' }, to: { path: '^src/api/' } },
    {
      name: 'core-knows-no-pipeline',
      comment: 'Core reaches chain families only through the family list and its own contract.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^src/chains/', pathNot: FAMILY_LIST, dependencyTypesNot: ['dynamic-import'] },
    },
    { name: 'chains-below-api', comment: 'Chain families know no API surface.', severity: 'error', from: { path: '^src/chains/' }, to: { path: '^src/api/' } },
    {
      name: 'api-through-core',
      comment: 'The API reaches chains only through core and the family list.',
      severity: 'error',
      from: { path: '^src/api/' },
      to: { path: '^src/chains/', pathNot: FAMILY_LIST },
    },
    {
      name: 'families-apart',
      comment: 'A family folder does not import another family.',
      severity: 'error',
      from: { path: '^src/chains/([^/]+)/' },
      to: { path: '^src/chains/[^/]+/', pathNot: ['^src/chains/$1/', FAMILY_LIST] },
    },
    {
      name: 'infrastructure-below',
      comment: 'lib, db and signers are used by the layers above, never the reverse.',
      severity: 'error',
      from: { path: '^src/(lib|db|signers)/' },
      to: { path: '^src/(core|chains|api|config)/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^src/generated/' },
    doNotFollow: { path: 'node_modules' },
  },
};
