// Writes the GraphQL schema to schema/schema.graphql (committed; a test fails when it is stale).
import { writeFile } from 'node:fs/promises';
import { printedSchema, SCHEMA_FILE } from '../src/api/graphql/print.js';
import { FAMILY_SPECS } from '../src/chains/list.js';
import { familySpecs } from '../src/core/registry.js';

await writeFile(SCHEMA_FILE, printedSchema(familySpecs(FAMILY_SPECS)));
console.log(`wrote ${SCHEMA_FILE}`);
