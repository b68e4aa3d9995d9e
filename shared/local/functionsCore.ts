import Module from 'node:module';

/**
 * A stand-in for `@azure/functions-core`, the module the real Functions worker injects. With it in place,
 * `@azure/functions` leaves its "test mode" and hands every `app.http/timer/storageQueue` registration
 * (binding metadata plus the user's handler) to us, exactly as it would to the Azure host. This relies on
 * the worker contract of the pinned @azure/functions version (see package.json).
 */

export interface BindingInfo {
  type: string;
  direction: 'in' | 'out';
  [key: string]: unknown;
}

export interface RegisteredFunction {
  name: string;
  bindings: Record<string, BindingInfo>;
  handler: (...args: unknown[]) => unknown;
}

const CORE_MODULE = '@azure/functions-core';
const CORE_PATH = '/__local_host__/@azure/functions-core.js';

const registry: RegisteredFunction[] = [];

const fakeCore = {
  version: 'local-host',
  hostVersion: 'local-host',
  setProgrammingModel(_model: unknown) {},
  getProgrammingModel() {
    return undefined;
  },
  registerFunction(metadata: { name: string; bindings: Record<string, BindingInfo> }, handler: (...args: unknown[]) => unknown) {
    if (registry.some((f) => f.name === metadata.name)) throw new Error(`function "${metadata.name}" is registered twice`);
    registry.push({ name: metadata.name, bindings: metadata.bindings, handler });
    return { dispose() {} };
  },
  // app.hook.* registrations are accepted and not run: the local host has no invocation hooks.
  registerHook(_name: string, _callback: unknown) {
    return { dispose() {} };
  },
  log(level: string, category: string, message: string) {
    if (level === 'error' || level === 'critical') process.stderr.write(`[functions ${category}] ${message}\n`);
  },
  Disposable: class {
    constructor(private readonly callOnDispose: () => void) {}
    dispose() {
      this.callOnDispose();
    }
  },
};

let installed = false;

/** Must run before the first `app.*` registration (i.e. before functions/ is loaded). */
export function installFunctionsCore(): void {
  if (installed) return;
  installed = true;
  const moduleInternals = Module as unknown as {
    _resolveFilename: (request: string, ...rest: unknown[]) => string;
    _cache: Record<string, unknown>;
  };
  const original = moduleInternals._resolveFilename;
  moduleInternals._resolveFilename = function (request: string, ...rest: unknown[]) {
    if (request === CORE_MODULE) return CORE_PATH;
    return original.call(this, request, ...rest);
  };
  const fake = new Module(CORE_PATH);
  fake.filename = CORE_PATH;
  fake.loaded = true;
  fake.exports = fakeCore;
  moduleInternals._cache[CORE_PATH] = fake;
}

export function registeredFunctions(): readonly RegisteredFunction[] {
  return registry;
}

/** The trigger binding of a registered function. */
export function triggerOf(fn: RegisteredFunction): BindingInfo {
  const trigger = Object.values(fn.bindings).find((b) => b.direction === 'in' && b.type.endsWith('Trigger'));
  if (!trigger) throw new Error(`function "${fn.name}" has no trigger binding`);
  return trigger;
}
