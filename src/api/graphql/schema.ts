import type { GraphQLSchema } from 'graphql';
import type { FamilySpecs } from '../../core/registry.js';
import { checkEveryRootField, guardReads } from './access.js';
import { apiKeyTypes } from './api-keys.js';
import { createBuilder, paging } from './builder.js';
import { directTypes } from './sign-and-forward.js';
import { entityTypes } from './entities.js';
import { graphqlFields } from './fields.js';
import { notificationTypes } from './notifications.js';
import { pluginTypes } from './plugins.js';
import { relayerTypes } from './relayers.js';
import { transactionTypes } from './transactions.js';
import { userOperationTypes } from './user-operations.js';

/**
 * The executable schema for the chain families offered: Pothos types, each root field saying what
 * permission it needs, with the read checks of object types applied. The app applies the rate
 * limits last (rate-limit.ts: they need the service's limiters).
 */
export function buildSchema(families: FamilySpecs): GraphQLSchema {
  const builder = createBuilder();
  const parts = { builder, families, ...paging(builder), ...graphqlFields(builder) };
  const relayers = relayerTypes(parts);
  const transactions = transactionTypes(parts, relayers.Relayer);
  userOperationTypes(parts, relayers.Relayer, transactions);
  notificationTypes(parts);
  directTypes(parts);
  entityTypes(parts, relayers);
  apiKeyTypes(parts);
  pluginTypes(parts);
  const schema = builder.toSchema({ sortSchema: true });
  checkEveryRootField(schema);
  return guardReads(schema);
}
