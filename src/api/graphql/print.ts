import path from 'node:path';
import { lexicographicSortSchema, printSchema } from 'graphql';
import type { FamilySpecs } from '../../core/registry.js';
import { projectDir } from '../../lib/root.js';
import { buildSchema } from './schema.js';

export const SCHEMA_FILE = path.join(projectDir(), 'schema/schema.graphql');

export const printedSchema = (families: FamilySpecs) => `${printSchema(lexicographicSortSchema(buildSchema(families)))}\n`;
