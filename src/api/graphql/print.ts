import { fileURLToPath } from 'node:url';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from './schema.js';

export const SCHEMA_FILE = fileURLToPath(new URL('../../../schema/schema.graphql', import.meta.url));

export const printedSchema = () => `${printSchema(lexicographicSortSchema(schema))}\n`;
