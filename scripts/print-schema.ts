// Writes the GraphQL schema to schema/schema.graphql (committed; a test fails when it is stale).
import { writeFile } from 'node:fs/promises';
import { printedSchema, SCHEMA_FILE } from '../src/api/graphql/print.js';

await writeFile(SCHEMA_FILE, printedSchema());
console.log(`wrote ${SCHEMA_FILE}`);
