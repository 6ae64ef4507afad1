import { createHash } from 'node:crypto';
import type { JsonSchema } from './records.js';

// A readable API reference page rendered from the OpenAPI document (no scripts, no CDN).

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:980px;margin:0 auto;padding:1rem 1.5rem;color:#1d2330}
code,pre{font-family:ui-monospace,Menlo,monospace;font-size:13px}code{background:#f1f3f7;padding:0 .25em;border-radius:3px}
pre{background:#1d2330;color:#e8ecf3;padding:.75rem;border-radius:6px;overflow:auto}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #dde2ea;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f6f8fb}
.op{border-top:1px solid #dde2ea;padding-top:.5rem;margin-top:1.5rem}.m{display:inline-block;min-width:4.2em;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:1px 4px}
.get{background:#2f7d32}.post{background:#1565c0}.patch{background:#8e5a00}.put{background:#6a1b9a}.delete{background:#b71c1c}
ul.toc{columns:2;list-style:none;padding:0}ul.toc a{text-decoration:none}em{color:#8a94a6;font-size:12px}
`;

/** The page loads nothing and runs nothing: its one inline style is allowed by its hash. */
export const DOCS_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

type Doc = {
  info: { title: string; description: string };
  paths: Record<string, Record<string, Op>>;
  tags: { name: string }[];
  // biome-ignore lint/suspicious/noExplicitAny: the page reads the generated OpenAPI document's response objects as they come.
  components: { schemas: Record<string, JsonSchema>; responses: Record<string, { description: string; 'x-status': number; content?: any }> };
};
type Op = {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  parameters?: { name: string; in: string; required: boolean; description?: string; schema: JsonSchema }[];
  requestBody?: { content: { 'application/json': { schema: JsonSchema; example?: unknown } } };
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  responses: Record<string, any>;
};

const esc = (s: unknown) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Escapes, then renders `code` spans. */
const text = (s: unknown) => esc(s).replace(/`([^`]+)`/g, '<code>$1</code>');

function typeName(s: JsonSchema | undefined, doc: Doc): string {
  if (!s) return 'any';
  if (typeof s.$ref === 'string') {
    const name = s.$ref.split('/').pop()!;
    const target = doc.components.schemas[name];
    return Array.isArray(target?.enum) ? (target.enum as string[]).map((v) => `"${v}"`).join(' | ') : `<a href="#schema-${esc(name)}">${esc(name)}</a>`;
  }
  const alternatives = s.oneOf ?? s.anyOf;
  if (Array.isArray(alternatives)) return (alternatives as JsonSchema[]).map((x) => typeName(x, doc)).join(' | ');
  const types = Array.isArray(s.type) ? (s.type as string[]) : s.type ? [s.type as string] : [];
  return (
    types
      .map((t) => {
        if (t === 'array') return `array of ${typeName(s.items as JsonSchema, doc)}`;
        if (t === 'integer' && s.format) return `integer (${esc(s.format)})`;
        if (t === 'string' && s.format) return `string (${esc(s.format)})`;
        return esc(t);
      })
      .join(' | ') || ('const' in s ? esc(JSON.stringify(s.const)) : 'any')
  );
}

function fieldsTable(schema: JsonSchema, doc: Doc): string {
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const rows = Object.entries(props).map(
    ([name, s]) =>
      `<tr><td><code>${esc(name)}</code>${required.has(name) ? ' <em>required</em>' : ''}</td><td>${typeName(s, doc)}</td><td>${text(s.description)}</td></tr>`,
  );
  return rows.length ? `<table><tr><th>Field</th><th>Type</th><th>Notes</th></tr>${rows.join('')}</table>` : '';
}

function operation(path: string, method: string, op: Op, doc: Doc): string {
  const params = op.parameters ?? [];
  const body = op.requestBody?.content['application/json'];
  const oneOf = (body?.schema.oneOf ?? []) as JsonSchema[];
  const shapes = oneOf.length && oneOf.every((r) => typeof r.$ref === 'string') ? oneOf.map((r) => String(r.$ref).split('/').pop()!) : [];
  const success = Object.entries(op.responses).find(([s]) => s.startsWith('2'));
  const envelope = success?.[1].content?.['application/json']?.schema;
  const errors = Object.keys(op.responses).filter((s) => !s.startsWith('2'));
  const curlBody = body?.example ? ` \\\n  -H 'Content-Type: application/json' \\\n  -d '${JSON.stringify(body.example)}'` : '';
  return `<section class="op" id="${esc(op.operationId)}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code></h3>
<p><strong>${esc(op.summary)}</strong></p>
${(op.description ?? '')
  .split('\n\n')
  .map((p) => `<p>${text(p)}</p>`)
  .join('\n')}
${params.length ? `<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th>Type</th><th>Notes</th></tr>${params.map((p) => `<tr><td><code>${esc(p.name)}</code>${p.required ? ' <em>required</em>' : ''}</td><td>${esc(p.in)}</td><td>${typeName(p.schema, doc)}</td><td>${text(p.description)}</td></tr>`).join('')}</table>` : ''}
${body ? `<h4>Body</h4>${shapes.length ? shapes.map((n) => `<p><strong>${esc(n)}</strong>: ${text(doc.components.schemas[n].description)}</p>${fieldsTable(doc.components.schemas[n], doc)}`).join('') : body.schema.properties ? fieldsTable(body.schema, doc) : `<p>${typeName(body.schema, doc)}</p>`}` : ''}
<h4>Response</h4>
<p>${esc(success?.[0])}: ${envelope?.properties ? `the envelope with <code>data</code> = ${typeName(envelope.properties.data, doc)}${envelope.properties.pagination ? ' and <code>pagination</code>' : ''}` : envelope ? `${typeName(envelope, doc)} (not in the envelope)` : '<code>OK</code> as plain text'}.</p>
<p>Errors: ${errors.map((s) => `<a href="#error-${s}">${s}</a>`).join(', ')}</p>
<pre>curl -X ${method.toUpperCase()} "$RELAYER_URL${esc(path.replace(/\{(\w+)\}/g, '<$1>'))}" \\
  -H "Authorization: Bearer $API_KEY"${esc(curlBody)}</pre>
</section>`;
}

export function docsPage(doc: Doc): string {
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
  const sections = doc.tags
    .map((t) => {
      const mine = ops.filter((o) => o.op.tags.includes(t.name));
      return mine.length ? `<h2 id="tag-${esc(t.name)}">${esc(t.name)}</h2>${mine.map((o) => operation(o.path, o.method, o.op, doc)).join('\n')}` : '';
    })
    .join('\n');
  const toc = ops
    .map((o) => `<li><a href="#${esc(o.op.operationId)}"><span class="m ${o.method}">${o.method.toUpperCase()}</span> ${esc(o.path)}</a></li>`)
    .join('');
  // The policy objects the document spells out (one per chain family that has one).
  const policies = ((doc.components.schemas.RelayerPolicies?.anyOf ?? []) as JsonSchema[]).flatMap((s) =>
    typeof s.$ref === 'string' ? [s.$ref.split('/').pop()!] : [],
  );
  const alternatives = (s: JsonSchema) => (Array.isArray(s.oneOf) ? (s.oneOf as JsonSchema[]) : [s]);
  const records = [
    'Transaction',
    'Relayer',
    'Notification',
    'RpcConfig',
    ...policies,
    'Pagination',
    'MessageSignature',
    'SignedTransaction',
    'JsonRpcRequest',
    'JsonRpcAnswer',
  ]
    .filter((n) => doc.components.schemas[n])
    .map(
      (n) =>
        `<h3 id="schema-${n}">${n}</h3><p>${text(doc.components.schemas[n].description)}</p>${alternatives(doc.components.schemas[n])
          .map((a) => (a.properties ? fieldsTable(a, doc) : `<p>${typeName(a, doc)}</p>`))
          .join('<p>or</p>')}`,
    )
    .join('\n');
  const errors = Object.entries(doc.components.responses)
    .map(([, r]) => {
      const ex = r.content['application/json'].example;
      const status = r['x-status'];
      return `<tr id="error-${status}"><td>${status}</td><td><code>${esc(ex.message)}</code></td><td>${text(r.description)}</td></tr>`;
    })
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)}</title>
<style>${STYLE}</style></head><body>
<h1>${esc(doc.info.title)}</h1>
<p>${text(doc.info.description)}</p>
<p>Authentication: every route except <code>GET /v1/health</code> takes <code>Authorization: Bearer &lt;API_KEY&gt;</code>. Machine-readable: <a href="/api/v1/openapi.json">openapi.json</a> (OpenAPI 3.1).</p>
<h2>Envelope</h2>
<pre>{"success": true, "data": ..., "error": null, "metadata": {"logs": [], "traces": []}, "pagination": {"current_page": 1, "per_page": 10, "total_items": 42}}
{"success": false, "data": null, "error": "value: must be an integer", "message": "Bad Request", "metadata": {"logs": [], "traces": []}}</pre>
<p><code>pagination</code> is present on list routes. Pages start at 1; <code>per_page</code> defaults to 10, at most 100.</p>
<h2>Errors</h2><table><tr><th>Status</th><th>message</th><th>When</th></tr>${errors}</table>
<h2>Routes</h2><ul class="toc">${toc}</ul>
${sections}
<h2>Records</h2>
${records}
</body></html>
`;
}
