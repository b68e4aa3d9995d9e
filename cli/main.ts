import { allowOnly, flag, has, parseArgs, Parsed, UsageError } from './args';
import { ApiError, Client, serverBase, UnreachableError } from './client';
import { actions, apply, describe, events, get, report, whatIf, why } from './commands';
import { Context } from './context';
import { OUTPUT_FORMATS, OutputFormat } from './output';

export const DEFAULT_SERVER = 'http://127.0.0.1:7071';

export const EXIT = { ok: 0, serverError: 1, usage: 2, unreachable: 3 } as const;

export const HELP = `cluster-failover: the command-line client of the cluster-failover API.

Usage:
  cluster-failover COMMAND [ARGS] [FLAGS]

Commands:
  get clusters [NAME]                 clusters: NAME, READY, TAINTS, AGE
  get bindings [NS/NAME | NAME]       ResourceBindings and ClusterResourceBindings:
                                      NAMESPACE, NAME, KIND, CLUSTERS, TASKS, AGE (-n NS for one namespace)
  get evictions                       the eviction ledger: CLUSTER, BINDING, STATE, REASON, DUE, MESSAGE
                                      (--cluster NAME, --state pending|scheduled|done|abandoned|blocked|failed;
                                      -o wide adds PURGEMODE, DECIDED, EXECUTED, ATTEMPTS, PRIORITY, WAITING-FOR)
  get policies [NAME]                 ClusterTaintPolicies: NAME, SHAPE, MODE (shadow|enforce), TAINTS,
                                      EVICTING (EvictionInProgress), BLAST-RADIUS (held/limit), AGE
  get templates                       resource templates: APIVERSION, KIND, NAMESPACE, NAME
                                      (--kind K, --api-version V, -n NS)
  get budgets [NS/NAME | NAME]        FailoverBudgets: NAMESPACE, NAME, MAX-IN-FLIGHT, IN-FLIGHT, MATCHING,
                                      WAITING (rows held back with BudgetExceeded) (-n NS)
  get failback                        bindings waiting to go back to their home cluster: BINDING, HOME,
                                      NOW-ON, STATE, DUE (-n NS; none when the server has no failback)
  describe cluster NAME               labels, conditions, taints and who holds them, policy windows, events
  describe binding NS/NAME | NAME     resource, placement, clusters, graceful-eviction tasks, evictions, events
  describe policy NAME                mode, conditions, blast radius (held, limit, refused, acknowledged),
                                      recent taint actions, shadow findings (WouldTaint, WouldEvict), events
  describe budget NS/NAME             selector, max in flight, the evictions in flight and the rows waiting
                                      for room, in the order they go (NAME -n NS works too)
  apply -f FILE | -f -                create or update objects from YAML (several documents) or JSON;
                                      prints "kind/name created|configured|unchanged" per object
  why binding NS/NAME | NAME          why the binding is where it is: the server's explanation, then its evictions
  pause | resume                      stop or restart evictions fleet-wide (admin token)
  drain CLUSTER                       cordon the cluster and plan the eviction of all it runs (admin token)
  uncordon CLUSTER                    remove the cordon; pending drain evictions are abandoned (admin token)
  acknowledge policy NAME             accept a ClusterTaintPolicy's exceeded blast radius: it may taint beyond
                                      MAX_FLEET_SHARE_TAINTED_BY_POLICY for this episode (admin token)
  what-if fail CLUSTER... [--condition TYPE=STATUS]
                                      what would happen if those clusters failed now (changes nothing):
                                      taints, tier and rate, evictions, blocked, tolerated, ETA
  report CLUSTER TYPE=STATUS... [--reason R] [--message M]
                                      a health report for the cluster, as its agent sends it (Ready=False
                                      fails it, Ready=True brings it back); signed with --cluster-key,
                                      CLUSTER_FAILOVER_CLUSTER_KEY, or a key derived from REPORTER_SIGNING_KEY
  events [--kind K] [--name N] [--since 5m|RFC3339] [--limit N] [-w|--watch]
                                      recorded decisions: TIME, TYPE, REASON, OBJECT, MESSAGE; --watch
                                      prints new ones every second until Ctrl-C (SIGINT) or SIGTERM

Flags:
  --server URL              API server (env CLUSTER_FAILOVER_SERVER; default ${DEFAULT_SERVER})
  --token TOKEN             admin token, sent as "Authorization: Bearer" (env CLUSTER_FAILOVER_TOKEN);
                            needed for apply, pause, resume, drain, uncordon, acknowledge when the server has AUTH_MODE=required
  --request-timeout SECONDS give up on a request after this long (default 30)
  -o, --output FORMAT       json or yaml (the API's own answer; lists as {items}), or wide (more columns, get only);
                            events --watch -o json prints one JSON event per line
  -h, --help                this help

Exit codes:
  0  success (an empty list is a success: "No resources found." on stderr)
  1  the server answered with an error (4xx/5xx); its message and each bad field go to stderr
  2  usage error: unknown command or flag, missing or bad argument, unreadable -f file
  3  the server could not be reached or did not answer in time

Output goes to stdout; errors and notices go to stderr. The token is never printed.

Examples:
  cluster-failover get clusters
  cluster-failover get bindings -n default -o yaml
  cluster-failover describe cluster member1
  cluster-failover describe policy not-ready-trial
  cluster-failover get budgets -n shop
  cluster-failover apply -f policy.yaml
  cluster-failover what-if fail member1 member2
  cluster-failover report member1 Ready=False
  cluster-failover events --kind Cluster --name member1 --watch
`;

interface Command {
  flags: string[];
  run: (ctx: Context, env: NodeJS.ProcessEnv) => Promise<void>;
}

const COMMANDS: Record<string, Command> = {
  get: { flags: ['output', 'namespace', 'cluster', 'state', 'kind', 'api-version'], run: get },
  describe: { flags: ['namespace'], run: describe },
  apply: { flags: ['output', 'filename'], run: apply },
  why: { flags: ['output'], run: why },
  pause: { flags: ['output'], run: (ctx) => actions.failoverSwitch(ctx, 'pause') },
  resume: { flags: ['output'], run: (ctx) => actions.failoverSwitch(ctx, 'resume') },
  drain: { flags: ['output'], run: actions.drain },
  uncordon: { flags: ['output'], run: actions.uncordon },
  acknowledge: { flags: ['output'], run: actions.acknowledge },
  'what-if': { flags: ['output', 'condition'], run: whatIf },
  events: { flags: ['output', 'kind', 'name', 'since', 'limit', 'watch'], run: events },
  report: { flags: ['output', 'reason', 'message', 'cluster-key'], run: report },
};

function outputFormat(parsed: Parsed): OutputFormat {
  const value = flag(parsed, 'output');
  if (value === undefined) return 'table';
  if (!(OUTPUT_FORMATS as string[]).includes(value)) throw new UsageError(`-o must be one of ${OUTPUT_FORMATS.join(', ')} (got "${value}")`);
  return value as OutputFormat;
}

function client(parsed: Parsed, env: NodeJS.ProcessEnv): Client {
  const server = flag(parsed, 'server') ?? (env.CLUSTER_FAILOVER_SERVER || DEFAULT_SERVER);
  let url: URL;
  try {
    url = new URL(serverBase(server));
  } catch {
    throw new UsageError(`--server must be a URL such as ${DEFAULT_SERVER} (got "${server}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--server must be an http or https URL (got "${server}")`);
  const timeout = flag(parsed, 'request-timeout') ?? '30';
  const seconds = Number(timeout);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--request-timeout must be a positive number of seconds (got "${timeout}")`);
  return new Client({ server, token: flag(parsed, 'token') ?? (env.CLUSTER_FAILOVER_TOKEN || undefined), timeoutMs: seconds * 1000 });
}

function reportApiError(err: ApiError, c: Client | undefined): void {
  const reason: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    413: 'RequestEntityTooLarge',
    415: 'UnsupportedMediaType',
    500: 'InternalError',
    503: 'ServiceUnavailable',
  };
  let text = `Error from server (${reason[err.status] ?? `HTTP ${err.status}`}): ${err.message}\n`;
  for (const e of err.errors) text += `  ${e.document !== undefined ? `document ${e.document}: ` : ''}${e.path}: ${e.message}\n`;
  if (err.status === 401 && c && !c.hasToken) text += 'hint: pass --token or set CLUSTER_FAILOVER_TOKEN\n';
  process.stderr.write(text);
}

/** Runs one command line; resolves to the exit code. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let c: Client | undefined;
  try {
    const parsed = parseArgs(argv);
    const [command, ...args] = parsed.positionals;
    if (command === 'help' || (has(parsed, 'help') && (!command || COMMANDS[command]))) {
      process.stdout.write(HELP);
      return EXIT.ok;
    }
    if (!command) {
      process.stderr.write(HELP);
      return EXIT.usage;
    }
    const spec = COMMANDS[command];
    if (!spec) throw new UsageError(`unknown command "${command}"`);
    allowOnly(parsed, command, spec.flags);
    c = client(parsed, env);
    await spec.run({ client: c, output: outputFormat(parsed), parsed, args }, env);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\nRun 'cluster-failover --help' for usage.\n`);
      return EXIT.usage;
    }
    if (err instanceof ApiError) {
      reportApiError(err, c);
      return EXIT.serverError;
    }
    if (err instanceof UnreachableError) {
      process.stderr.write(`error: ${err.message}\n`);
      return EXIT.unreachable;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT.serverError;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
