/**
 * Loaded first by functions/index.ts: chooses the exporters before any function (and any meter) exists.
 * See shared/telemetry/setup.ts.
 */
import { startTelemetry } from '../shared/telemetry/setup';

startTelemetry();
