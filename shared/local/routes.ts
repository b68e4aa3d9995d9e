/**
 * Azure Functions route templates ("clusters/{name}", "clusters/{name?}", "files/{*path}"), matched the
 * way the host does for the templates this app uses. Constraints such as "{id:int}" are accepted and
 * not enforced.
 */
export interface CompiledRoute<T> {
  template: string;
  target: T;
  /** The decoded parameters, or undefined when the path is not this route's; throws BadRouteError on a parameter no route may take. */
  match(path: string): Record<string, string> | undefined;
  /** Higher is more specific: literal segments first. */
  specificity: number;
}

/** A request path refused before any function runs (400): bad percent-encoding, a dot segment, a parameter that spans segments. */
export class BadRouteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadRouteError';
  }
}

// "/" and "\" would make one parameter several path segments (and are not allowed in a stored key, nor
// are "#", "?" and control characters); a name never holds them.
// eslint-disable-next-line no-control-regex -- control characters are among what it refuses
const NOT_IN_A_SEGMENT = /[/\\#?\u0000-\u001f\u007f-\u009f]/;

function decodeSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new BadRouteError('the URL path is not valid percent-encoding');
  }
}

/**
 * The first dot segment ("." or "..", also percent-encoded as "%2e") of a request target's path, if any.
 * URL normalisation resolves them before routing, so "clusters/x/status/%2e%2e" would reach DELETE
 * clusters/x: such paths are refused instead. "\" counts as a separator, as URL parsing treats it so.
 */
export function dotSegmentOf(requestTarget: string): string | undefined {
  const path = requestTarget.split(/[?#]/, 1)[0];
  for (const raw of path.split(/[/\\]/)) {
    if (raw === '' || !/^(?:\.|%2e){1,2}$/i.test(raw)) continue;
    return raw;
  }
  return undefined;
}

export function compileRoute<T>(template: string, target: T): CompiledRoute<T> {
  const segments = template
    .replace(/^\/+|\/+$/g, '')
    .split('/')
    .filter(Boolean);
  const names: Array<{ name: string; catchAll: boolean }> = [];
  let pattern = '^';
  let literals = 0;
  for (const segment of segments) {
    const param = /^\{(\*)?([A-Za-z_][A-Za-z0-9_]*)(?::[^}?]*)?(\?)?\}$/.exec(segment);
    if (!param) {
      literals++;
      pattern += '/' + segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      continue;
    }
    const [, catchAll, name, optional] = param;
    names.push({ name, catchAll: !!catchAll });
    if (catchAll) pattern += '(?:/(.*))?';
    else if (optional) pattern += '(?:/([^/]+))?';
    else pattern += '/([^/]+)';
  }
  const regex = new RegExp(pattern + '/?$', 'i');
  return {
    template,
    target,
    specificity: literals * 100 - names.length,
    match(path) {
      const found = regex.exec(path.startsWith('/') ? path : '/' + path);
      if (!found) return undefined;
      const params: Record<string, string> = {};
      names.forEach(({ name, catchAll }, i) => {
        if (found[i + 1] === undefined) return;
        const value = decodeSegment(found[i + 1]);
        // A catch-all spans segments by design; any other parameter is one segment, also once decoded.
        if (!catchAll && NOT_IN_A_SEGMENT.test(value)) {
          throw new BadRouteError(`route parameter "${name}" must be one path segment: it may not hold "/", "\\", "#", "?" or control characters`);
        }
        params[name] = value;
      });
      return params;
    },
  };
}

export function routeTable<T>(routes: Array<{ template: string; target: T }>): (path: string) => { target: T; params: Record<string, string> } | undefined {
  const compiled = routes.map((r) => compileRoute(r.template, r.target)).sort((a, b) => b.specificity - a.specificity);
  return (path) => {
    for (const route of compiled) {
      const params = route.match(path);
      if (params) return { target: route.target, params };
    }
    return undefined;
  };
}
