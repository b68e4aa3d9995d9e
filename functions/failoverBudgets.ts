import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deleteBudget, getBudget, listBudgets } from '../shared/controllers/budgets';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/failoverbudgets[/{namespace}[/{name}]], DELETE /api/failoverbudgets/{namespace}/{name}. */
export const failoverBudgets = httpFunction(async (req) => {
  const plane = controlPlane();
  const { namespace, name } = routeParams(req);
  if (!namespace || !name) {
    allowMethods(req, ['GET']);
    return json(200, { apiVersion: 'failover.io/v1alpha1', kind: 'FailoverBudgetList', items: await listBudgets(plane, namespace) });
  }
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteBudget(plane, { namespace, name }))) throw notFound(`FailoverBudget ${namespace}/${name} not found`);
    return json(200, { kind: 'FailoverBudget', name: `${namespace}/${name}`, action: 'deleted' });
  }
  const budget = await getBudget(plane, { namespace, name });
  if (!budget) throw notFound(`FailoverBudget ${namespace}/${name} not found`);
  return json(200, budget);
});

app.http('failoverBudgets', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'failoverbudgets/{namespace?}/{name?}',
  handler: failoverBudgets,
});
