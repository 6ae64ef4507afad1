import { MapperKind, mapSchema } from '@graphql-tools/utils';
import { defaultFieldResolver, type GraphQLFieldConfig, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { Context } from './context.js';

export type Resolver = GraphQLFieldResolver<unknown, Context>;

/**
 * The schema with each object field `wrapperOf` picks resolving through the wrapper it returns
 * around the field's resolver (a field without one reads its parent's property).
 */
export function wrapResolvers(
  schema: GraphQLSchema,
  wrapperOf: (field: GraphQLFieldConfig<unknown, Context>, typeName: string) => ((resolve: Resolver) => Resolver) | undefined,
): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field, _name, typeName) => {
      const wrap = wrapperOf(field, typeName);
      return wrap ? { ...field, resolve: wrap(field.resolve ?? defaultFieldResolver) } : field;
    },
  });
}
