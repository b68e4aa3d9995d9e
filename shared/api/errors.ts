import { z } from 'zod';
import { closestName } from './suggest';

/** One problem with a request, naming the field (dotted path with [index]) and the reason. */
export interface FieldError {
  path: string;
  message: string;
  document?: number;
}

/** An error with an HTTP status that the HTTP layer turns into a JSON error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: FieldError[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Karmada mode: Karmada owns these objects; they are applied to its API server, not to this API (409). */
export class ManagedInKarmadaError extends ApiError {
  constructor(readonly kind: string) {
    super(409, `${kind} objects are managed in Karmada in Karmada mode: apply them to the Karmada API server (kubectl apply -f), not to this API`);
    this.name = 'ManagedInKarmadaError';
  }
}

export const badRequest = (errors: FieldError[], message = 'invalid request') => new ApiError(400, message, errors);
export const notFound = (message: string) => new ApiError(404, message);

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

const UNKNOWN_MARKER = 'unknown-fields:';

/**
 * A strict object: unknown fields are errors, and the error carries the closest known name
 * (`pureMode` → `purgeMode`). The suggestion is computed here, where the known names are in scope.
 */
export function strictObject<T extends z.ZodRawShape>(shape: T) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== 'unrecognized_keys') return undefined;
      const suggestions = Object.fromEntries(issue.keys.map((key) => [key, closestName(key, known) ?? null]));
      return UNKNOWN_MARKER + JSON.stringify(suggestions);
    },
  });
}

/** Zod issues as field errors, one per bad field (one per unknown key). */
export function toFieldErrors(error: z.ZodError, prefix: ReadonlyArray<PropertyKey> = []): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      let suggestions: Record<string, string | null> = {};
      if (issue.message.startsWith(UNKNOWN_MARKER)) suggestions = JSON.parse(issue.message.slice(UNKNOWN_MARKER.length)) as Record<string, string | null>;
      for (const key of issue.keys) {
        const near = suggestions[key];
        out.push({ path: formatPath([...path, key]), message: near ? `unknown field; did you mean "${near}"?` : 'unknown field' });
      }
      continue;
    }
    out.push({ path: formatPath(path), message: describeIssue(issue) });
  }
  return out;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return `required field is missing (expected ${issue.expected})`;
    // Integer checks report as invalid_type "int" and carry the schema's own message.
    return issue.expected === 'int' ? issue.message : `expected ${issue.expected}`;
  }
  if (issue.code === 'invalid_value') {
    return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  // A map key (a label or annotation name) that fails its own rules: say which rule.
  if (issue.code === 'invalid_key' && issue.issues.length > 0) return `invalid key: ${issue.issues.map((i) => i.message).join('; ')}`;
  return issue.message;
}
