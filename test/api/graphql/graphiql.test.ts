import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Instance, startInstance } from '../../support/instance.js';
import { API_KEY, evmConfig, ROOT } from '../../support/service.js';

// A real browser against the real service with every host but the service blocked: GraphiQL and the
// REST reference must work with no internet access and try to load nothing from elsewhere.

const CHROMIUM = '/usr/bin/chromium';
const OUTPUT = path.join(ROOT, 'test-output');

describe('pages in a browser with no internet access', () => {
  let dir: string;
  let instance: Instance;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
    dir = await mkdtemp(path.join(tmpdir(), 'relayer-graphiql-'));
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(evmConfig('http://127.0.0.1:1')));
    instance = await startInstance({ CONFIG_PATH: path.join(dir, 'config.json'), DATA_DIR: dir });
    const { port } = new URL(instance.url);
    // Name resolution fails for every host but the service's address: nothing reaches outside even if routing missed it.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1', `--unsafely-treat-insecure-origin-as-secure=http://127.0.0.1:${port}`],
    });
    await mkdir(OUTPUT, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await instance?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A page whose requests to anything but the service are aborted and recorded, with its console errors. */
  async function isolatedPage(): Promise<{ context: BrowserContext; page: Page; outside: string[]; problems: string[]; own: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const outside: string[] = [];
    const problems: string[] = [];
    const own: string[] = [];
    const origin = new URL(instance.url).origin;
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (new URL(url).origin === origin) return route.continue();
      outside.push(url);
      return route.abort('blockedbyclient');
    });
    // Requests that bypass routing (workers, preloads) still show up here.
    context.on('request', (r) => {
      const url = r.url();
      if (url.startsWith(origin)) own.push(new URL(url).pathname);
      if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:') && !outside.includes(url)) outside.push(url);
    });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 40[14]/.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    return { context, page, outside, problems, own };
  }

  it('GraphiQL at /graphql runs a query with the API key typed into its headers tab', async () => {
    const { context, page, outside, problems, own } = await isolatedPage();
    const res = await page.goto(`${instance.url}/graphql`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("default-src 'none'");

    // The headers tab: replace its placeholder with the key, as JSON.
    await page.getByRole('button', { name: 'Headers' }).click();
    const headers = page.locator('.graphiql-editor-tool .graphiql-editor').last();
    await headers.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${API_KEY}` }));
    await expect.poll(() => headers.innerText(), { timeout: 10_000 }).toContain(API_KEY.slice(0, 20));

    // The schema, fetched again with the key: GraphiQL's introspection query passes the cost limits.
    const introspection = page.waitForResponse((r) => r.url().endsWith('/graphql') && (r.request().postData() ?? '').includes('__schema'));
    await page.getByRole('button', { name: /Re-fetch GraphQL schema/i }).click();
    const schemaResponse = await introspection;
    expect(schemaResponse.status()).toBe(200);
    const schemaBody = await schemaResponse.json();
    expect(schemaBody.errors).toBeUndefined();
    expect(schemaBody.data.__schema.queryType.name).toBe('Query');

    // The query editor holds the default query (the relayers with their last transactions): run it.
    await page.getByRole('button', { name: /Execute query/ }).click();
    const result = page.locator('.graphiql-response');
    await expect.poll(() => result.innerText(), { timeout: 30_000 }).toContain('"evm-relayer"');
    expect(await result.innerText()).toContain('"localnet"');
    await page.screenshot({ path: path.join(OUTPUT, 'graphiql.png'), fullPage: true });

    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    // The editor's workers came from the service.
    expect(own).toEqual(expect.arrayContaining([expect.stringMatching(/^\/graphql\/assets\/graphql-worker-\w+\.js$/)]));
    await context.close();
  });

  it('the REST reference at /api/v1/docs renders its routes', async () => {
    const { context, page, outside, problems } = await isolatedPage();
    const res = await page.goto(`${instance.url}/api/v1/docs`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("default-src 'none'");
    await expect.poll(() => page.locator('h1').innerText()).not.toBe('');
    expect(await page.locator('#sendTransaction h3').innerText()).toContain('/api/v1/relayers/{relayer_id}/transactions');
    // The inline style applied (allowed by its hash): the method badges are coloured.
    expect(await page.locator('#sendTransaction .m.post').evaluate((e) => getComputedStyle(e).backgroundColor)).toBe('rgb(21, 101, 192)');
    await page.screenshot({ path: path.join(OUTPUT, 'rest-docs.png') });
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
