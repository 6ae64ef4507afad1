import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, type ValidationContext } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { GraphQLLimits } from '../../core/settings.js';

// spec: false makes yoga answer 400 even to `Accept: application/json`, where it answers 200 to
// other validation errors (GraphQL over HTTP): a refused document is the client's error.
const refused = () => ({ code: 'BAD_REQUEST', http: { status: 400, spec: false } });

/** A refused document: a 400 whose message names the limit (graphql-armor's wording). */
export const limitError = (message: string) => new GraphQLError(message, { extensions: refused() });

// The validation rules report instead of throwing, so every exceeded limit is listed and the
// request ends as an ordinary validation failure; the token count runs inside the parser, which can only throw.
const report = (ctx: ValidationContext | null, err: GraphQLError) => ctx?.reportError(limitError(err.message));
const reporting = { propagateOnRejection: false, onReject: [report] };

/** graphql-armor's limits plus a size limit on the document text. Introspection (`__schema`) is exempt from depth and cost. */
export function limitsPlugin(limits: GraphQLLimits): Plugin {
  const armor = EnvelopArmorPlugin({
    // Field suggestions stay: every caller of /graphql holds the token and may read the schema anyway.
    blockFieldSuggestion: { enabled: false },
    maxTokens: { n: limits.tokens, onReject: [(_, err) => Object.assign(err.extensions, refused())] },
    maxDepth: { n: limits.depth, ...reporting },
    maxAliases: { n: limits.aliases, ...reporting },
    maxDirectives: { n: limits.directives, ...reporting },
    costLimit: { maxCost: limits.cost, ...reporting },
  });
  return {
    onPluginInit({ addPlugin }) {
      addPlugin({
        onParams({ params }) {
          const size = typeof params.query === 'string' ? Buffer.byteLength(params.query) : 0;
          if (size > limits.bytes) throw limitError(`Syntax Error: Document size limit of ${limits.bytes} bytes exceeded, found ${size}.`);
        },
        // yoga marks parse and validation errors as GraphQL-over-HTTP ones (200 to application/json),
        // the token limit's too (it throws in the parser, before yoga's hooks): a refusal stays a 400.
        onResultProcess({ result }) {
          const errors = Array.isArray(result) || !('errors' in result) ? [] : (result.errors ?? []);
          for (const e of errors) if (e.extensions?.code === 'BAD_REQUEST' && e.message.startsWith('Syntax Error: ')) Object.assign(e.extensions, refused());
        },
      });
      addPlugin(armor as Plugin);
    },
  };
}
