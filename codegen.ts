import type { CodegenConfig } from '@graphql-codegen/cli';

// Typed documents for the operations the server runs itself (the REST adapter's), checked
// against the committed schema. `npm run codegen` regenerates src/generated/graphql.ts.
const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['src/**/*.graphql'],
  ignoreNoDocuments: true,
  generates: {
    'src/generated/graphql.ts': {
      plugins: ['typescript', 'typescript-operations', 'typed-document-node'],
      config: {
        scalars: { BigInt: 'string', Long: 'number', DateTime: 'string', JSON: 'unknown', ID: 'string' },
        enumsAsTypes: true,
        useTypeImports: true,
        avoidOptionals: { field: true, inputValue: false, object: true },
      },
    },
  },
};

export default config;
