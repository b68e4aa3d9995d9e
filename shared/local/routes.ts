/**
 * Azure Functions route templates ("clusters/{name}", "clusters/{name?}", "files/{*path}"), matched the
 * way the host does for the templates this app uses. Constraints such as "{id:int}" are accepted and
 * not enforced.
 */
export interface CompiledRoute<T> {
  template: string;
  target: T;
  match(path: string): Record<string, string> | undefined;
  /** Higher is more specific: literal segments first. */
  specificity: number;
}

export function compileRoute<T>(template: string, target: T): CompiledRoute<T> {
  const segments = template
    .replace(/^\/+|\/+$/g, '')
    .split('/')
    .filter(Boolean);
  const names: string[] = [];
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
    names.push(name);
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
      names.forEach((name, i) => {
        if (found[i + 1] !== undefined) params[name] = decodeURIComponent(found[i + 1]);
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
