import { Response } from '@whatwg-node/fetch';
import { createHash } from 'node:crypto';
import type { GraphiQLOptions } from 'graphql-yoga';

// GraphiQL served by the service itself: yoga's own page loads its scripts, styles and editor
// workers from a CDN; here they come from the @graphql-yoga/render-graphiql package (which bundles
// them) under ASSETS, so the page works offline and runs no third-party script where the API key
// is typed. Each asset's name carries its content hash, so browsers may keep it.

export const ASSETS = '/graphql/assets/';

/** Only this origin; styles inline too (the editor injects its own). No inline script. */
export const GRAPHIQL_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "worker-src 'self'",
  "connect-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: string | Uint8Array<ArrayBuffer>;
  type: string;
}

interface Assets {
  files: Map<string, Asset>;
  url: Record<string, string>;
}

function loadAssets(): Promise<Assets> {
  return import('@graphql-yoga/render-graphiql/graphiql').then((m) => {
    const files = new Map<string, Asset>();
    const url: Record<string, string> = {};
    const add = (name: string, ext: string, body: string | Uint8Array<ArrayBuffer>, type: string) => {
      const file = `${name}-${createHash('sha256').update(body).digest('hex').slice(0, 12)}.${ext}`;
      files.set(file, { body, type });
      url[name] = ASSETS + file;
    };
    const js = 'text/javascript; charset=utf-8';
    add('style', 'css', m.css, 'text/css; charset=utf-8');
    add('graphiql', 'js', m.js, js);
    add('editor-worker', 'js', m.editorWorkerService, js);
    add('json-worker', 'js', m.jsonWorker, js);
    add('graphql-worker', 'js', m.graphqlWorker, js);
    const [, icon = ''] = /^data:[^;]+;base64,(.*)$/.exec(m.favicon) ?? [];
    add('favicon', 'ico', new Uint8Array(Buffer.from(icon, 'base64')), 'image/x-icon');
    // Runs before the bundle: the editor's workers, then GraphiQL once the page is parsed.
    const boot = `self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_id, label) => (${JSON.stringify({
      editorWorkerService: url['editor-worker'],
      json: url['json-worker'],
      graphql: url['graphql-worker'],
    })})[label] };
document.addEventListener('DOMContentLoaded', () => {
  const options = JSON.parse(document.getElementById('graphiql-options').textContent);
  YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), options);
});
`;
    add('boot', 'js', boot, js);
    return { files, url };
  });
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The GraphiQL page (yoga's `renderGraphiQL`): options as JSON data, every script and style from ASSETS. */
function page({ url }: Assets, options?: GraphiQLOptions): string {
  // `<` escaped so no option value can close the data element.
  const json = JSON.stringify(options ?? {}).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(options?.title ?? 'GraphiQL')}</title>
<link rel="icon" href="${url.favicon}"><link rel="stylesheet" href="${url.style}">
</head><body id="body" class="no-focus-outline"><noscript>GraphiQL needs JavaScript.</noscript><div id="root"></div>
<script type="application/json" id="graphiql-options">${json}</script>
<script src="${url.boot}"></script><script src="${url.graphiql}"></script>
</body></html>
`;
}

/**
 * GraphiQL for one app: `render`, the page (yoga's `renderGraphiQL`), and `asset`, an asset of the
 * page or undefined when `pathname` names none. The bundle is about 9 MB of JavaScript: read on the
 * first visit, not at start-up.
 */
export function graphiql() {
  let loading: Promise<Assets> | undefined;
  const assets = () => (loading ??= loadAssets());
  return {
    render: async (options?: GraphiQLOptions) => page(await assets(), options),
    async asset(pathname: string): Promise<Response | undefined> {
      if (!pathname.startsWith(ASSETS)) return undefined;
      const asset = (await assets()).files.get(pathname.slice(ASSETS.length));
      if (!asset) return undefined;
      return new Response(asset.body, {
        headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' },
      });
    },
  };
}
