import type { FieldType, RequestField } from '../../core/family-spec.js';
import type { Builder } from './builder.js';

// GraphQL input types from the service's field descriptions (core/family-spec.ts): the chain families
// describe their request fields once, and the GraphQL input is derived from them.

const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Enum and input types of one builder, each made once per name. */
export function graphqlFields(builder: Builder) {
  const enums = new Map<string, ReturnType<typeof makeEnum>>();
  const inputs = new Map<string, ReturnType<typeof makeInput>>();

  const makeEnum = (name: string, values: readonly string[]) => builder.enumType(name, { values: values as [string, ...string[]] });

  /** The GraphQL enum of that name and values (the same type each time it is asked for). */
  function enumType(name: string, values: readonly string[]) {
    let e = enums.get(name);
    if (!e) enums.set(name, (e = makeEnum(name, values)));
    return e;
  }

  function makeInput(name: string, fields: Record<string, RequestField>, allOptional: boolean) {
    return builder.inputType(name, { fields: (t) => inputFields(t, fields, allOptional) });
  }

  function typeRef(type: FieldType): unknown {
    switch (type.kind) {
      case 'u128':
        return 'BigInt';
      case 'int64':
        return 'Long';
      case 'string':
        return 'String';
      case 'boolean':
        return 'Boolean';
      case 'any':
        return 'JSON';
      case 'enum':
        return enumType(type.name, type.values);
      case 'object': {
        if (!type.fields) return 'JSON';
        if (!type.name) throw new Error('an object field with fields needs a GraphQL input type name');
        let ref = inputs.get(type.name);
        if (!ref) inputs.set(type.name, (ref = makeInput(type.name, type.fields, false)));
        return ref;
      }
      case 'list':
        return [typeRef(type.items)];
    }
  }

  /**
   * Input fields by their GraphQL names. `allOptional`: none is required in GraphQL (one input
   * serving several request shapes, whose own rules the service checks).
   */
  function inputFields(t: InputFieldBuilder, fields: Record<string, RequestField>, allOptional: boolean) {
    return Object.fromEntries(
      Object.entries(fields).map(([name, f]) => [
        f.gql ?? camel(name),
        t.field({
          type: typeRef(f.type) as never,
          required: !allOptional && !!f.required,
          ...(f.gqlDescription ? { description: f.gqlDescription } : {}),
        }),
      ]),
    );
  }
  return { enumType, inputFields };
}

export type GraphQLFields = ReturnType<typeof graphqlFields>;
type InputFieldBuilder = Parameters<Parameters<Builder['inputType']>[1]['fields']>[0];
