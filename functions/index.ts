/**
 * The one list of functions. Azure loads this file (package.json "main") and each import registers its
 * function with `app.*` (each file is named after the function it registers); the local host loads the
 * same file and runs what was registered.
 */
import './telemetry';
// HTTP: objects and reads
import './apply';
import './applyOperations';
import './clusters';
import './clusterTaintPolicies';
import './resourceBindings';
import './clusterResourceBindings';
import './propagationPolicies';
import './clusterPropagationPolicies';
import './failoverBudgets';
import './templates';
import './events';
import './fleet';
import './fleetHistory';
import './evictionLedger';
import './evictionSummary';
import './failoverSwitch';
import './whatIf';
import './bindingWhy';
import './failback';
import './healthz';
import './openapi';
import './console';
// HTTP: health and workload reports
import './clusterStatus';
import './alertmanagerWebhook';
import './azureMonitorWebhook';
import './bindingStatus';
import './evictionTasks';
// HTTP: operator actions
import './clusterDrain';
// taints
import './clusterMonitor';
import './clusterProbes';
import './karmadaSync';
import './taintEvaluation';
import './taintResync';
import './policyStatus';
// cluster failover
import './taintManager';
import './taintManagerResync';
import './evictionPacer';
import './evictionWorker';
import './evictionRepair';
import './writeJournalRepair';
import './scheduler';
import './schedulerResync';
import './gracefulEvictionSweep';
// application failover
import './applicationFailoverCheck';
import './applicationFailoverResync';
