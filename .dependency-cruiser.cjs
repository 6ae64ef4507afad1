// Import rules (npm run lint), type imports included: chains depend on core, config depends on
// core, the API surfaces (GraphQL, REST) depend on core, the composition root (src/*.ts) depends on
// everything, and nothing depends back on it. What core needs of the layers above (the family list,
// the settings, the metrics) is declared in core and filled in from above: the chain families reach
// core and the API only as the family registry the composition root builds from chains/list.ts.
const ROOT = '^src/[^/]+\\.ts$';
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    { name: 'root-is-top', comment: 'Nothing imports the composition root.', severity: 'error', from: { pathNot: ROOT }, to: { path: ROOT } },
    {
      name: 'core-knows-nothing-above',
      comment: 'Core imports nothing from chains, config, metrics or the API: they depend on core, never the reverse.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^src/(chains|config|api|metrics)/' },
    },
    { name: 'chains-below-api', comment: 'Chain families know no API surface.', severity: 'error', from: { path: '^src/chains/' }, to: { path: '^src/api/' } },
    { name: 'chains-below-config', comment: 'Chain families know no config file: they read what core holds.', severity: 'error', from: { path: '^src/chains/' }, to: { path: '^src/(config|metrics)/' } },
    {
      name: 'api-through-registry',
      comment: 'The API reaches chain families only through the registry it is given.',
      severity: 'error',
      from: { path: '^src/api/' },
      to: { path: '^src/(chains|config|metrics)/' },
    },
    { name: 'config-below-api', comment: 'The config file is read at start-up; the API reads what core holds.', severity: 'error', from: { path: '^src/config/' }, to: { path: '^src/(api|metrics)/' } },
    {
      name: 'families-apart',
      comment: 'A family folder does not import another family.',
      severity: 'error',
      from: { path: '^src/chains/([^/]+)/' },
      to: { path: '^src/chains/[^/]+/', pathNot: '^src/chains/$1/' },
    },
    {
      name: 'infrastructure-below',
      comment: 'lib, db and signers are used by the layers above, never the reverse.',
      severity: 'error',
      from: { path: '^src/(lib|db|signers)/' },
      to: { path: '^src/(core|chains|api|config|metrics)/' },
    },
    {
      name: 'custodies-handed-down',
      comment: 'The custody list is read by the composition root only, and handed down (rt.signers.custodies).',
      severity: 'error',
      from: { pathNot: ROOT },
      to: { path: '^src/signers/list\\.ts$' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^src/generated/' },
    doNotFollow: { path: 'node_modules' },
  },
};
