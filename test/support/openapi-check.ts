import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { App } from '../../src/app.js';

// Every response the REST tests get is checked against the service's own OpenAPI document: the
// operation of its path and method must list its status, and the body must match that status's schema.

type Doc = { paths: Record<string, Record<string, { responses: Record<string, any> }>>; components: { responses: Record<string, any> } };

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

export function responseChecker(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, formats: { u128: true } });
  addFormats(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const templates = Object.keys(doc.paths).map((p) => ({ p, re: new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}/?$`) }));

  const schemaOf = (response: any) => {
    const r = response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
    const [type, media] = Object.entries(r.content ?? {})[0] ?? [];
    return type ? { type, schema: (media as { schema: object }).schema } : undefined;
  };
  // Compiled up front, so checking costs the tests no time.
  for (const [p, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const s = schemaOf(response);
        if (s) compiled.set(`${p} ${method} ${status}`, ajv.compile({ ...s.schema, components: doc.components }));
      }
    }
  }

  return function check(method: string, url: string, status: number, contentType: string | null, text: string): string | null {
    const path = new URL(url).pathname;
    // As the router: a literal segment beats a parameter (…/transactions/pending before …/{transaction_id}).
    const op = templates
      .filter((t) => t.re.test(path) && doc.paths[t.p][method.toLowerCase()])
      .sort((a, b) => (a.p.match(/\{/g)?.length ?? 0) - (b.p.match(/\{/g)?.length ?? 0))[0];
    const operation = op && doc.paths[op.p][method.toLowerCase()];
    if (!operation) return null; // not an operation of the document (404/405 of the router)
    const response = operation.responses[String(status)];
    if (!response) return `${method} ${op.p}: status ${status} is not in the document (${text.slice(0, 200)})`;
    const documented = schemaOf(response);
    if (!documented) return null;
    const { type } = documented;
    if (!contentType?.startsWith(type)) return `${method} ${op.p} ${status}: content type ${contentType}, documented ${type}`;
    const validate = compiled.get(`${op.p} ${method.toLowerCase()} ${status}`)!;
    const body = type === 'application/json' ? JSON.parse(text) : text;
    if (validate(body)) return null;
    return `${method} ${path} ${status} does not match the OpenAPI document: ${ajv.errorsText(validate.errors)} in ${text.slice(0, 300)}`;
  };
}

/**
 * Makes `app` check every response against its OpenAPI document; a mismatch throws (failing the
 * test that made the request) and is kept in `mismatches`.
 */
export async function checkResponses(app: App): Promise<{ mismatches: string[]; checked: () => number }> {
  const doc = (await (await app.fetch(new Request('http://relayer.test/api/v1/openapi.json'))).json()) as Doc;
  const check = responseChecker(doc);
  const mismatches: string[] = [];
  let checked = 0;
  const fetch = app.fetch.bind(app);
  app.fetch = async (request) => {
    const { method, url } = request;
    const res = await fetch(request);
    const text = await res.clone().text();
    const problem = check(method, url, res.status, res.headers.get('content-type'), text);
    checked += 1;
    if (problem) {
      mismatches.push(problem);
      throw new Error(problem);
    }
    return res;
  };
  return { mismatches, checked: () => checked };
}
