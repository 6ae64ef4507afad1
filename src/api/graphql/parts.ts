import type { FamilySpecs } from '../../core/registry.js';
import type { Builder, paging } from './builder.js';
import type { GraphQLFields } from './fields.js';

/** What the parts of one schema are built with: its builder, the chain families it offers, and helpers on that builder. */
export type SchemaParts = { builder: Builder; families: FamilySpecs } & ReturnType<typeof paging> & GraphQLFields;
