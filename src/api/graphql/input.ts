import { Response } from '@whatwg-node/fetch';
import { type DocumentNode, type GraphQLError, Kind, visit } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { parseJson } from '../../lib/json.js';
import { textIssues, textProblem } from '../../lib/validate.js';
import { BodyTooLarge, InvalidUtf8, isJsonContentType, readBodyText } from '../body.js';
import { AppError } from './app-error.js';

// Input rules of /graphql that the REST adapter applies on its side too (src/api/body.ts,
// src/lib/validate.ts): POST bodies are JSON only (no form or text/plain posts a browser could
// send from another site), bounded in size, parsed keeping exact integers, and no text
// anywhere holds a character the database cannot store.

const errorResponse = (status: number, message: string, code: string) => Response.json({ errors: [{ message, extensions: { code } }] }, { status });

/** The string literals of a document the rules refuse. */
function documentIssues(document: DocumentNode): string[] {
  const found: string[] = [];
  visit(document, {
    [Kind.STRING](node) {
      const why = textProblem(node.value);
      if (why) found.push(`a string literal ${why}`);
    },
  });
  return found;
}

/**
 * The error of an operation whose variables or string literals hold text the rules refuse, or null.
 * A document's literals are looked at once per checker (yoga caches parsed documents, REST routes
 * are parsed at start-up): each app makes its own.
 */
export function inputChecker(): (document: DocumentNode, variables: Record<string, unknown> | null | undefined) => GraphQLError | null {
  const literalIssues = new WeakMap<DocumentNode, string[]>();
  return (document, variables) => {
    const issues: string[] = [];
    textIssues(variables ?? {}, '', issues);
    let literals = literalIssues.get(document);
    if (!literals) literalIssues.set(document, (literals = documentIssues(document)));
    issues.push(...literals);
    return issues.length ? new AppError('BAD_REQUEST', 'Bad Request', issues.slice(0, 20).join('; ')) : null;
  };
}

/** A POST body of /graphql: its text and JSON object, or the response refusing it (415, 413, 400). */
export async function readGraphQLBody(request: Request, maxBodyBytes: number): Promise<{ text: string; body: Record<string, unknown> } | Response> {
  const type = request.headers.get('content-type');
  if (!isJsonContentType(type)) {
    return errorResponse(415, `Unsupported Media Type: send application/json (got ${type ?? 'no Content-Type'})`, 'UNSUPPORTED_MEDIA_TYPE');
  }
  let text: string;
  try {
    text = await readBodyText(request, maxBodyBytes);
  } catch (e) {
    if (e instanceof BodyTooLarge) return errorResponse(413, `Payload Too Large: ${e.message}`, 'PAYLOAD_TOO_LARGE');
    if (e instanceof InvalidUtf8) return errorResponse(400, 'POST body must be valid UTF-8', 'BAD_REQUEST');
    throw e;
  }
  let body: unknown;
  try {
    body = parseJson(text);
  } catch {
    return errorResponse(400, 'POST body sent invalid JSON.', 'BAD_REQUEST');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return errorResponse(400, 'POST body must be a JSON object', 'BAD_REQUEST');
  return { text, body: body as Record<string, unknown> };
}

export function useInputRules(maxBodyBytes: number): Plugin {
  const inputError = inputChecker();
  return {
    onRequestParse({ request, setRequestParser }) {
      if (request.method !== 'POST') return;
      setRequestParser(async (req) => {
        const read = await readGraphQLBody(req, maxBodyBytes);
        return (read instanceof Response ? read : read.body) as never;
      });
    },
    onExecute({ args, setResultAndStopExecution }) {
      const refused = inputError(args.document, args.variableValues);
      if (refused) setResultAndStopExecution({ errors: [refused] });
    },
  };
}
