/**
 * The one list of functions. Azure loads this file (package.json "main") and each import registers its
 * function with `app.*`; the local host loads the same file and runs what was registered.
 */
import './telemetry';
import './apply';
import './clusters';
import './clusterStatus';
import './clusterTaintPolicies';
import './events';
import './health';
import './clusterMonitor';
import './taintResync';
import './taintEvaluation';
import './bindings';
import './taintManager';
import './evictions';
import './failover';
import './alertWebhooks';
import './bindingStatus';
import './scheduler';
import './applicationFailover';
import './propagationPolicies';
