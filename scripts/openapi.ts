import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { astToString, COMMENT_HEADER, default as openapiTS } from 'openapi-typescript';
import { format, resolveConfig } from 'prettier';
import { openApiDocument } from '../shared/api/openapi';

/**
 * npm run openapi: writes the API's contract where it is read without a running host. The document goes
 * to docs/reference/openapi.json; the TypeScript types generated from it go to the CLI and the console,
 * which may not import shared/ (the CLI is a client of the HTTP API; the console is a browser bundle).
 * test/unit/openapiArtifacts.test.ts fails when any of them differs from what this would write.
 */

const ROOT = join(__dirname, '..');

export const ARTIFACTS = {
  document: join(ROOT, 'docs', 'reference', 'openapi.json'),
  cliTypes: join(ROOT, 'cli', 'api.gen.ts'),
  consoleTypes: join(ROOT, 'console', 'src', 'api.gen.ts'),
} as const;

const HEADER = [COMMENT_HEADER.trimEnd(), '// Generated from the OpenAPI document (shared/api/openapi.ts) by `npm run openapi`.', '', ''].join('\n');

async function prettier(text: string, path: string): Promise<string> {
  const options = (await resolveConfig(path)) ?? {};
  return format(text, { ...options, filepath: path });
}

/** Each file's path and the content `npm run openapi` writes there. */
export async function renderArtifacts(): Promise<Map<string, string>> {
  const document = openApiDocument();
  // openapi-typescript takes the document as an object of its own OpenAPI types.
  const nodes = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], { alphabetize: false, exportType: false });
  const types = HEADER + astToString(nodes);
  return new Map([
    [ARTIFACTS.document, await prettier(JSON.stringify(document), ARTIFACTS.document)],
    [ARTIFACTS.cliTypes, await prettier(types, ARTIFACTS.cliTypes)],
    [ARTIFACTS.consoleTypes, await prettier(types, ARTIFACTS.consoleTypes)],
  ]);
}

/** The files that differ from what `npm run openapi` would write. */
export async function staleArtifacts(): Promise<string[]> {
  const stale: string[] = [];
  for (const [path, content] of await renderArtifacts()) {
    let current = '';
    try {
      current = readFileSync(path, 'utf8');
    } catch {
      // missing: stale
    }
    if (current !== content) stale.push(relative(ROOT, path));
  }
  return stale;
}

async function main(): Promise<void> {
  for (const [path, content] of await renderArtifacts()) {
    writeFileSync(path, content);
    console.log(`wrote ${relative(ROOT, path)}`);
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
