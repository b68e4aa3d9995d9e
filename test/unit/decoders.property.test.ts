import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { alertmanagerPayloadSchema } from '../../shared/api/alerts';
import { decodeApplyDocuments, decodeSingle, parseDocuments } from '../../shared/api/decode';
import { ApiError } from '../../shared/api/errors';
import { statusReportSchema } from '../../shared/api/resources';

/** Every decoder either answers or throws a 4xx ApiError whose errors name a path and a reason: nothing else. */
function expectCleanOutcome(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expect(apiError.status).toBeGreaterThanOrEqual(400);
    expect(apiError.status).toBeLessThan(500);
    for (const fieldError of apiError.errors) {
      expect(typeof fieldError.path).toBe('string');
      expect(fieldError.message.length).toBeGreaterThan(0);
    }
  }
}

const runs = { numRuns: 300 };

describe('decoders under arbitrary input', () => {
  it('parseDocuments: any text as JSON or YAML', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), fc.constantFrom('json' as const, 'yaml' as const), (text, format) => {
        expectCleanOutcome(() => parseDocuments(text, format));
      }),
      runs,
    );
  });

  it('decodeApplyDocuments: any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        expectCleanOutcome(() => decodeApplyDocuments([value]));
      }),
      runs,
    );
  });

  it('decodeApplyDocuments: objects shaped like our kinds with arbitrary specs', () => {
    const kind = fc.constantFrom('Cluster', 'ClusterTaintPolicy', 'ResourceBinding', 'ClusterResourceBinding');
    const apiVersion = fc.constantFrom('cluster.karmada.io/v1alpha1', 'policy.karmada.io/v1alpha1', 'work.karmada.io/v1alpha2');
    fc.assert(
      fc.property(kind, apiVersion, fc.string({ maxLength: 30 }), fc.jsonValue({ maxDepth: 5 }), (k, v, name, spec) => {
        expectCleanOutcome(() => decodeApplyDocuments([{ apiVersion: v, kind: k, metadata: { name }, spec }]));
      }),
      runs,
    );
  });

  it('status reports: arbitrary condition lists', () => {
    const condition = fc.record(
      {
        type: fc.string({ maxLength: 20 }),
        status: fc.constantFrom('True', 'False', 'Unknown', 'true', ''),
        reason: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
      },
      { requiredKeys: ['type', 'status'] },
    );
    fc.assert(
      fc.property(fc.array(condition, { maxLength: 40 }), fc.option(fc.string({ maxLength: 30 }), { nil: undefined }), (conditions, observedAt) => {
        expectCleanOutcome(() => decodeSingle([{ conditions, ...(observedAt !== undefined ? { observedAt } : {}) }], statusReportSchema));
      }),
      runs,
    );
  });

  it('a decoded report keeps every condition it was given', () => {
    const type = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,15}$/);
    fc.assert(
      fc.property(fc.uniqueArray(type, { minLength: 1, maxLength: 20 }), fc.constantFrom('True', 'False', 'Unknown'), (types, status) => {
        const report = decodeSingle([{ conditions: types.map((t) => ({ type: t, status })) }], statusReportSchema);
        expect(report.conditions.map((c) => c.type)).toEqual(types);
      }),
      runs,
    );
  });

  it('Alertmanager payloads: arbitrary JSON never escapes validation', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), (value) => {
        const parsed = alertmanagerPayloadSchema.safeParse(value);
        expect(typeof parsed.success).toBe('boolean');
      }),
      runs,
    );
  });
});
