import { app } from '@azure/functions';
import { z } from 'zod';
import { badRequest, notFound, toFieldErrors } from '../shared/api/errors';
import { objectName } from '../shared/api/resources';
import { apiVersionSchema, kindSchema, templateNamespaceSchema } from '../shared/api/templates';
import { deleteTemplate, getTemplate, listTemplates } from '../shared/controllers/templates';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { controlPlane } from '../shared/runtime';

// The rules of a template's own fields: a value outside them names no template and would not be a valid storage key.
const templateQuery = z.strictObject({
  apiVersion: apiVersionSchema.optional(),
  kind: kindSchema.optional(),
  namespace: templateNamespaceSchema.optional(),
  name: objectName.optional(),
});

/**
 * GET (and HEAD) /api/templates?apiVersion=&kind=&namespace=&name=: resource templates (one when all of
 * apiVersion, kind and name are given); DELETE with apiVersion, kind, name (and namespace): deletes the
 * template and the binding it derived.
 */
export const templates = httpFunction(async (req) => {
  allowMethods(req, ['GET', 'HEAD', 'DELETE']);
  const parsed = templateQuery.safeParse(Object.fromEntries(req.query.entries()));
  if (!parsed.success) throw badRequest(toFieldErrors(parsed.error).map((e) => ({ ...e, path: `query.${e.path}` })));
  const plane = controlPlane();
  const { apiVersion, kind, namespace, name } = parsed.data;
  const one = apiVersion && kind && name ? { apiVersion, kind, name, ...(namespace ? { namespace } : {}) } : undefined;
  const label = one ? `${one.kind} ${namespace ? `${namespace}/` : ''}${one.name}` : '';
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!one)
      throw badRequest(
        ['apiVersion', 'kind', 'name'].filter((f) => !parsed.data[f as 'kind']).map((f) => ({ path: `query.${f}`, message: 'required to delete a template' })),
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
