import { app } from '@azure/functions';
import { templateQuerySchema } from '../shared/api/contract/queries';
import { badRequest, notFound } from '../shared/api/errors';
import { deleteTemplate, getTemplate, listTemplates } from '../shared/controllers/templates';
import { requireAdmin } from '../shared/http/auth';
import { parseQuery } from '../shared/http/query';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/**
 * GET (and HEAD) /api/templates?apiVersion=&kind=&namespace=&name=: resource templates (one when all of
 * apiVersion, kind and name are given); DELETE with apiVersion, kind, name (and namespace): deletes the
 * template and the binding it derived.
 */
export const templates = httpFunction(async (req, ctx) => {
  allowMethods(req, ['GET', 'HEAD', 'DELETE']);
  const query = parseQuery(req, templateQuerySchema);
  const plane = invocationPlane(ctx);
  const { apiVersion, kind, namespace, name } = query;
  const one = apiVersion && kind && name ? { apiVersion, kind, name, ...(namespace ? { namespace } : {}) } : undefined;
  const label = one ? `${one.kind} ${namespace ? `${namespace}/` : ''}${one.name}` : '';
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!one)
      throw badRequest(
        ['apiVersion', 'kind', 'name'].filter((f) => !query[f as 'kind']).map((f) => ({ path: `query.${f}`, message: 'required to delete a template' })),
      );
    if (!(await deleteTemplate(plane, one))) throw notFound(`${label} not found`);
    return json(200, { kind: one.kind, name: one.name, action: 'deleted' });
  }
  if (one) {
    const template = await getTemplate(plane, one);
    if (!template) throw notFound(`${label} not found`);
    return json(200, template);
  }
  return json(200, { apiVersion: 'v1', kind: 'List', items: await listTemplates(plane, { apiVersion, kind, namespace }) });
});

app.http('templates', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'templates', ...handingOff(templates) });
