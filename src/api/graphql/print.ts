import { fileURLToPath } from 'node:url';
import { lexicographicSortSchema, printSchema } from 'graphql';
import type { FamilySpecs } from '../../core/registry.js';
import { buildSchema } from './schema.js';

export const SCHEMA_FILE = fileURLToPath(new URL('../../../schema/schema.graphql', import.meta.url));

export const printedSchema = (families: FamilySpecs) => `${printSchema(lexicographicSortSchema(buildSchema(families)))}\n`;
