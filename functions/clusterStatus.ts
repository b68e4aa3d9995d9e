import { app } from '@azure/functions';
import { bodyFormat, bodyText, decodeSingle, parseDocuments, readBodyBytes } from '../shared/api/decode';
import { badRequest } from '../shared/api/errors';
import { clusterName, statusReportSchema } from '../shared/api/resources';
import { reportClusterStatus } from '../shared/controllers/clusters';
import { clusterResource } from '../shared/controllers/views';
import { verifyClusterReport } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** POST /api/clusters/{name}/status: our native health report (conditions + optional observedAt). */
export const clusterStatus = httpFunction(async (req, ctx) => {
  allowMethods(req, ['POST']);
  const name = clusterName.safeParse(req.params.name);
  if (!name.success) throw badRequest([{ path: 'name', message: `cluster name in the URL ${name.error.issues[0].message}` }]);
  const plane = invocationPlane(ctx);
  const format = bodyFormat(req.headers.get('content-type'));
  const bytes = await readBodyBytes(req, plane.config.maxRequestBodyBytes);
  // Who may report: checked on the raw bytes, before anything is parsed or stored.
  const signed = verifyClusterReport(req, plane.config.auth, name.data, bytes, plane.clock.now());
  const report = decodeSingle(parseDocuments(bodyText(bytes), format), statusReportSchema);
  const outcome = await reportClusterStatus(plane, name.data, report, signed);
  return json(200, clusterResource(outcome.record, outcome.etag));
});

app.http('clusterStatus', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusters/{name}/status', ...handingOff(clusterStatus) });
