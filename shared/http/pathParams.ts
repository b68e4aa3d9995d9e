import type { HttpRequest } from '@azure/functions';
import type { z } from 'zod';
import { badRequest } from '../api/errors';
import { clusterName, namespaceName, objectName } from '../api/resources';

/**
 * Route parameters, checked where they arrive. Azure's host hands a function what the URL held, decoded:
 * an encoded "/" ("member1%2Fstatus"), "..", a control character. Such a value names no object and is
 * not a valid storage key, so it is refused here, as 400 naming the parameter, before anything is read.
 */

/** The rule of each parameter name this app's routes use. */
const RULES: ReadonlyMap<string, z.ZodType<string>> = new Map<string, z.ZodType<string>>([
  ['name', objectName],
  ['namespace', namespaceName],
  ['cluster', clusterName],
  // failover/{action}: a word; which words the function knows is its own 404.
  ['action', objectName],
]);

// Any other parameter (none today but a catch-all, which spans segments by design and is not checked here).
// eslint-disable-next-line no-control-regex -- control characters are among what it refuses
const ONE_SEGMENT = /^[^/\\#?\u0000-\u001f\u007f-\u009f]{1,253}$/;

/** Why `value` cannot be route parameter `name`, or undefined when it can. */
export function routeParamProblem(name: string, value: string): string | undefined {
  if (value === '.' || value === '..') return 'must name a resource, not a dot segment';
  const rule = RULES.get(name);
  if (!rule)
    return ONE_SEGMENT.test(value) ? undefined : 'must be one path segment of at most 253 characters, without "/", "\\", "#", "?" or control characters';
  const parsed = rule.safeParse(value);
  return parsed.success ? undefined : parsed.error.issues[0].message;
}

/** The request's route parameters, each valid by its rule; otherwise 400 naming the parameters and why. */
export function routeParams(req: Pick<HttpRequest, 'params'>): Record<string, string> {
  const params: Record<string, string> = {};
  const errors: Array<{ path: string; message: string }> = [];
  for (const [name, value] of Object.entries(req.params)) {
    // An optional parameter the URL left out.
    if (value === undefined || value === '') continue;
    const problem = routeParamProblem(name, value);
    if (problem) errors.push({ path: name, message: `in the URL ${problem}` });
    else params[name] = value;
  }
  if (errors.length > 0) {
    throw badRequest(
      errors,
      `invalid ${errors.map((e) => e.path).join(' and ')} in the URL: ${errors.map((e) => e.message.replace(/^in the URL /, '')).join('; ')}`,
    );
  }
  return params;
}
