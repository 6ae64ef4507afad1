import type { z } from 'zod';
import { camelName, graphqlInfo, type FamilySpec } from '../../core/family-spec.js';
import { integerFormatOf } from '../../lib/validate.js';
import type { Builder } from './builder.js';

// GraphQL input types derived from the chain families' zod schemas (their send fields): the type of
// each field from its schema, its description from graphqlInfo.

type Def = { type: string; innerType?: z.ZodType; in?: z.ZodType; element?: z.ZodType; options?: z.ZodType[]; shape?: z.ZodRawShape; values?: unknown[] };
const defOf = (s: z.ZodType) => s._zod.def as unknown as Def;

/** What GraphQL knows of a schema: graphqlInfo of it or of any wrapper on the way to its type. */
function infoOf(schema: z.ZodType): { description?: string; name?: string } {
  let info = {};
  for (let s: z.ZodType | undefined = schema; s; s = defOf(s).innerType) info = { ...graphqlInfo.get(s), ...info };
  return info;
}

/** The schema inside its wrappers (optional, nullable, default) and, for a transform, its input side. */
function core(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    if (integerFormatOf(s)) return s;
    const def = defOf(s);
    if (def.innerType) s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else return s;
  }
}

/** An object's fields, or a union of objects' fields merged (each with its types in every member). */
function objectFields(schema: z.ZodType): Map<string, { types: z.ZodType[]; required: boolean }> | undefined {
  const def = defOf(schema);
  const members = def.type === 'object' ? [schema] : def.type === 'union' ? def.options!.map(core) : [];
  if (!members.length || members.some((m) => defOf(m).type !== 'object')) return undefined;
  const fields = new Map<string, { types: z.ZodType[]; required: boolean }>();
  for (const m of members) {
    for (const [k, v] of Object.entries(defOf(m).shape!)) {
      const f = fields.get(k) ?? { types: [], required: true };
      f.types.push(v as z.ZodType);
      fields.set(k, f);
    }
  }
  for (const f of fields.values()) f.required = f.types.length === members.length && f.types.every((t) => !t.safeParse(undefined).success);
  return fields;
}

/** The GraphQL type name of a scalar schema, or undefined for one GraphQL has no single type for. */
function scalarName(s: z.ZodType): string | undefined {
  const format = integerFormatOf(s);
  if (format) return format.format === 'u128' ? 'BigInt' : 'Long';
  const def = defOf(s);
  if (def.type === 'string' || (def.type === 'literal' && def.values!.every((v) => typeof v === 'string'))) return 'String';
  if (def.type === 'boolean') return 'Boolean';
  if (def.type === 'number') return 'Int';
  if (def.type === 'unknown' || def.type === 'any') return 'JSON';
  return undefined;
}

/** "a", "a or b", "a, b or c". */
const orList = (items: string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`);

/** What a field's GraphQL type is made from: the schema's kind, its integer format or its name. */
function typeKey(schema: z.ZodType): string {
  const s = core(schema);
  const def = defOf(s);
  if (def.type === 'array') return `[${typeKey(def.element!)}]`;
  return scalarName(s) ?? infoOf(schema).name ?? (s.meta() as { id?: string } | undefined)?.id ?? 'JSON';
}

/**
 * The fields of every family's send request in one object, by GraphQL name (GraphQL takes one
 * input for all shapes; the service checks which fields belong to the relayer's type). A field
 * several families take must have one GraphQL type in all of them.
 */
export function sendFieldsOf(families: readonly FamilySpec[]): Record<string, { schema: z.ZodType; description?: string }> {
  const out: Record<string, { schema: z.ZodType; description?: string }> = {};
  for (const family of families) {
    for (const [name, schema] of Object.entries(family.send.fields.shape) as [string, z.ZodType][]) {
      const key = camelName(name);
      const known = out[key];
      if (known && typeKey(known.schema) !== typeKey(schema)) throw new Error(`send field ${name} is defined by two families with different types`);
      out[key] = { schema: known?.schema ?? schema, description: known?.description ?? infoOf(schema).description };
    }
  }
  return out;
}

/** The enum and input types of one builder, each made once per name. */
export function graphqlFields(builder: Builder) {
  const enums = new Map<string, ReturnType<typeof makeEnum>>();
  const inputs = new Map<string, ReturnType<typeof builder.inputType>>();
  const makeEnum = (name: string, values: readonly string[]) => builder.enumType(name, { values: values as [string, ...string[]] });

  /** The GraphQL enum of that name and values (the same type each time it is asked for). */
  function enumType(name: string, values: readonly string[]) {
    let e = enums.get(name);
    if (!e) enums.set(name, (e = makeEnum(name, values)));
    return e;
  }

  function typeRef(schema: z.ZodType): unknown {
    const s = core(schema);
    const scalar = scalarName(s);
    if (scalar) return scalar;
    const def = defOf(s);
    if (def.type === 'array') return [typeRef(def.element!)];
    if (def.type === 'enum') {
      const name = (s.meta() as { id?: string } | undefined)?.id;
      if (!name) throw new Error('an enum field needs a GraphQL name: .meta({ id })');
      return enumType(name, Object.values((s as z.ZodEnum).enum) as string[]);
    }
    const name = infoOf(schema).name;
    const fields = name ? objectFields(s) : undefined;
    if (!fields) return 'JSON';
    let ref = inputs.get(name!);
    if (!ref) {
      ref = builder.inputType(name!, {
        fields: (t) =>
          Object.fromEntries(
            [...fields].map(([k, f]) => {
              const names = f.types.map((x) => scalarName(core(x)));
              const literals = f.types.map(core).flatMap((x) => (defOf(x).type === 'literal' ? (defOf(x).values as string[]) : []));
              // A field whose members disagree on its type is JSON; a discriminator lists its values.
              const type = names.every((n) => n && n === names[0]) ? names[0]! : 'JSON';
              const description = literals.length === f.types.length ? orList(literals) : undefined;
              return [camelName(k), t.field({ type: type as never, required: f.required, ...(description ? { description } : {}) })];
            }),
          ),
      });
      inputs.set(name!, ref);
    }
    return ref;
  }

  /** The send input's fields: none is required (each shape's own rules are its family's). */
  function sendInputFields(t: InputFieldBuilder, families: readonly FamilySpec[]) {
    return Object.fromEntries(
      Object.entries(sendFieldsOf(families)).map(([key, f]) => [
        key,
        t.field({ type: typeRef(f.schema) as never, required: false, ...(f.description ? { description: f.description } : {}) }),
      ]),
    );
  }

  /** The GraphQL enum a family's send field declares under `name` (.meta({ id })). */
  function familyEnum(families: readonly FamilySpec[], name: string) {
    for (const family of families) {
      for (const schema of Object.values(family.send.fields.shape) as z.ZodType[]) {
        const s = core(schema);
        if (defOf(s).type === 'enum' && (s.meta() as { id?: string } | undefined)?.id === name) return typeRef(s) as ReturnType<typeof enumType>;
      }
    }
    throw new Error(`no family declares the enum ${name}`);
  }
  return { enumType, sendInputFields, familyEnum };
}

export type GraphQLFields = ReturnType<typeof graphqlFields>;
type InputFieldBuilder = Parameters<Parameters<Builder['inputType']>[1]['fields']>[0];
