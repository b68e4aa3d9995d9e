import { compileErrors, validate } from '@readme/openapi-parser';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { staleArtifacts } from '../../scripts/openapi';
import type { DrainAnswer, FailbackAnswer, UncordonAnswer } from '../../shared/api/contract/views';
import { openApiDocument } from '../../shared/api/openapi';
import type { drainCluster, uncordonCluster } from '../../shared/controllers/drain';
import type { listFailback } from '../../shared/controllers/failback';

/**
 * The contract itself: a valid OpenAPI 3.1 document, and the files generated from it (the document in
 * docs/, the CLI's and the console's types) as `npm run openapi` would write them now.
 */
describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    // validate() dereferences in place: give it a copy.
    const result = await validate(structuredClone(openApiDocument()) as never);
    expect(result.valid ? '' : compileErrors(result)).toBe('');
    expect(result.specification).toBe('OpenAPI');
    expect(openApiDocument().openapi).toBe('3.1.0');
  });

  it('lists every route under /api with its errors and who may call it', () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, { responses: Record<string, unknown>; security: unknown[] }>> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/apply', '/clusters/{name}/status', '/fleet', '/healthz', '/openapi.json', '/failback']));
    expect(Object.keys(doc.paths['/clusters/{name}/status'].post.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '404', '409', '413', '415', 'default']),
    );
    expect(doc.paths['/apply'].post.security).toEqual([{ adminToken: [] }]);
    expect(doc.paths['/fleet'].get.security).toEqual([]);
  });

  it('types the answers built outside the views module', () => {
    // These use-cases declare their own answer types; the compiler holds them to the contract's.
    expectTypeOf<Awaited<ReturnType<typeof drainCluster>>>().toEqualTypeOf<DrainAnswer>();
    expectTypeOf<Awaited<ReturnType<typeof uncordonCluster>>>().toEqualTypeOf<UncordonAnswer>();
    expectTypeOf<Awaited<ReturnType<typeof listFailback>>>().toEqualTypeOf<FailbackAnswer>();
  });

  it('is what docs/reference/openapi.json and the generated client types hold', async () => {
    const stale = await staleArtifacts();
    expect(stale, `out of date: ${stale.join(', ')}; run npm run openapi`).toEqual([]);
  }, 60_000);
});
