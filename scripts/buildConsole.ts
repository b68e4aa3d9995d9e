import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/**
 * Bundles the operator console (console/: preact + uPlot) into dist/console/: index.html, app.js and
 * app.css, minified, no source maps. Prints the bundle size on one line.
 */
const ROOT = join(__dirname, '..');
const SOURCE = join(ROOT, 'console');
const OUT = join(ROOT, 'dist', 'console');

async function main(): Promise<void> {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  await build({
    entryPoints: { app: join(SOURCE, 'src', 'main.tsx') },
    outdir: OUT,
    bundle: true,
    minify: true,
    sourcemap: false,
    format: 'iife',
    platform: 'browser',
    target: ['es2022'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(SOURCE, 'tsconfig.json'),
    legalComments: 'none',
    logLevel: 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  copyFileSync(join(SOURCE, 'index.html'), join(OUT, 'index.html'));
  const files = ['index.html', 'app.js', 'app.css'].map((name) => readFileSync(join(OUT, name)));
  const raw = files.reduce((sum, f) => sum + f.length, 0);
  const gzip = files.reduce((sum, f) => sum + gzipSync(f, { level: 9 }).length, 0);
  console.log(`console bundle: ${raw} bytes (${gzip} bytes gzip) in dist/console`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
