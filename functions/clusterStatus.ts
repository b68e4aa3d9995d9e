import { app } from '@azure/functions';
import { badRequest } from '../shared/api/errors';
import { decodeSingle } from '../shared/api/decode';
import { clusterName, statusReportSchema } from '../shared/api/resources';
import { reportClusterStatus } from '../shared/controllers/clusters';
import { clusterResource } from '../shared/controllers/records';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** POST /api/clusters/{name}/status: our native health report (conditions + optional observedAt). */
export const clusterStatus = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const name = clusterName.safeParse(req.params.name);
  if (!name.success) throw badRequest([{ path: 'name', message: `cluster name in the URL ${name.error.issues[0].message}` }]);
  const plane = controlPlane();
  const report = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), statusReportSchema);
  const outcome = await reportClusterStatus(plane, name.data, report);
  return json(200, clusterResource(outcome.record, outcome.etag));
});

app.http('clusterStatus', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusters/{name}/status', handler: clusterStatus });
