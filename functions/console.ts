import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { app, HttpRequest, HttpResponseInit } from '@azure/functions';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';

/**
 * GET /api/console[/{file}]: the operator console, a static bundle built by `npm run build:console`
 * (scripts/buildConsole.ts) into dist/console. Only the bundle's own file names are served.
 */
const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/** dist/console next to the sources (tsx) or next to dist/functions (the Azure build). */
function bundleFolder(): string | undefined {
  return [join(__dirname, '..', 'dist', 'console'), join(__dirname, '..', 'console')].find((dir) => existsSync(join(dir, 'index.html')));
}

const cache = new Map<string, Buffer>();
function readBundleFile(name: string): Buffer | undefined {
  const cached = cache.get(name);
  if (cached) return cached;
  const dir = bundleFolder();
  if (!dir || !existsSync(join(dir, name))) return undefined;
  const content = readFileSync(join(dir, name));
  // Cached once found: the bundle does not change while the app runs (a rebuild needs a restart).
  cache.set(name, content);
  return content;
}

export const operatorConsole = httpFunction((req: HttpRequest): Promise<HttpResponseInit> => {
  allowMethods(req, ['GET', 'HEAD']);
  const path = (req.params.path ?? '').replace(/^\/+|\/+$/g, '');
  const name = path === '' ? 'index.html' : path;
  const type = Object.hasOwn(FILES, name) ? FILES[name] : undefined;
  const content = type ? readBundleFile(name) : undefined;
  if (!type || !content) {
    const message = type ? 'the console is not built: run npm run build:console' : `no console file ${JSON.stringify(path)}`;
    return Promise.resolve(json(404, { error: message }));
  }
  if (name !== 'index.html') {
    return Promise.resolve({ status: 200, body: content, headers: { 'content-type': type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' } });
  }
  // The page links its assets relative to the console's folder: /api/console (no slash) would resolve
  // them under /api, so the links are made absolute from the path the page was asked for.
  const pathname = new URL(req.url).pathname;
  const base = path === '' ? pathname.replace(/\/*$/, '/') : pathname.slice(0, pathname.length - name.length);
  const html = content.toString('utf8').replaceAll('"./app.', `"${base}app.`);
  return Promise.resolve({
    status: 200,
    body: html,
    headers: {
      'content-type': type,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    },
  });
});

app.http('console', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'console/{*path}', handler: operatorConsole });
