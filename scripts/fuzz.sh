#!/usr/bin/env bash
# API fuzzing: schemathesis against a local host with AUTH_MODE=required, driven by the OpenAPI document
# the host serves at /api/openapi.json. Bounded in time; exits non-zero when schemathesis finds a failure.
#
#   bash scripts/fuzz.sh                    # the fixed seed below
#   FUZZ_SEED=123 bash scripts/fuzz.sh      # another seed (printed at start and in the summary)
#
# Settings (environment): FUZZ_SEED, FUZZ_MAX_EXAMPLES (per operation, authenticated and delete phases),
# FUZZ_TIMEOUT_SECONDS (hard limit of the whole run), FUZZ_WORKERS, FUZZ_SCHEMA (a file or URL to use
# instead of the served document), FUZZ_REPORT_DIR (JUnit and NDJSON reports; test-results/fuzz).
set -euo pipefail

SCHEMATHESIS_VERSION=4.32.5
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SEED="${FUZZ_SEED:-20251126}"
MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-50}"
# A guard against a hung run, not the run's size (that is the examples per operation): about 3.5 minutes
# here and 5 on CI's machine, so a slower machine does not turn a clean run into a failure.
TIMEOUT_SECONDS="${FUZZ_TIMEOUT_SECONDS:-900}"
WORKERS="${FUZZ_WORKERS:-1}"
REPORT_DIR="${FUZZ_REPORT_DIR:-$ROOT/test-results/fuzz}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/cluster-failover/schemathesis/$SCHEMATHESIS_VERSION"

log() { printf '[fuzz] %s\n' "$*" >&2; }

# --- schemathesis, once per version, outside the repository --------------------------------------------
# A venv cannot be moved (its scripts name their own path), so it is built in place and marked complete
# last: a half-built one (an interrupted install) is rebuilt rather than used.
if [[ ! -f "$CACHE/.installed" ]]; then
  log "installing schemathesis $SCHEMATHESIS_VERSION into $CACHE"
  rm -rf "$CACHE"
  mkdir -p "$(dirname "$CACHE")"
  python3 -m venv "$CACHE"
  "$CACHE/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
  touch "$CACHE/.installed"
fi
ST="$CACHE/bin/schemathesis"
# The limit counts from here: a first run's install is not the fuzzing's time.
started_at=$(date +%s)
deadline=$((started_at + TIMEOUT_SECONDS))

# --- a throwaway host -------------------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cluster-failover-fuzz.XXXXXX")"
HOST_PID=""
cleanup() {
  local status=$?
  if [[ -n "$HOST_PID" ]] && kill -0 "$HOST_PID" 2>/dev/null; then
    kill -TERM "$HOST_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$HOST_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$HOST_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

secret() { python3 -c 'import secrets; print(secrets.token_hex(24))'; }
# Fresh secrets every run, held only in this process's environment and the host's.
ADMIN_TOKEN="$(secret)"
ALERTMANAGER_TOKEN="$(secret)"
AZURE_MONITOR_TOKEN="$(secret)"
REPORTER_SIGNING_KEY="$(secret)"
export ADMIN_TOKEN ALERTMANAGER_TOKEN AZURE_MONITOR_TOKEN REPORTER_SIGNING_KEY

log "seed $SEED, $MAX_EXAMPLES examples per operation, at most ${TIMEOUT_SECONDS}s, schemathesis $SCHEMATHESIS_VERSION"
# Created here: the background job opens it only once it runs, and the wait below reads it at once.
: >"$WORK/host.log"
(
  cd "$ROOT"
  unset AzureWebJobsStorage KARMADA_KUBECONFIG MEMBER_KUBECONFIGS APPLICATIONINSIGHTS_CONNECTION_STRING OTEL_EXPORTER_OTLP_ENDPOINT
  exec env AUTH_MODE=required \
    AZURITE_LOCATION="$WORK/azurite" PORT=0 \
    node --import tsx shared/local/main.ts
) >"$WORK/host.log" 2>&1 &
HOST_PID=$!

BASE=""
for _ in $(seq 1 300); do
  if ! kill -0 "$HOST_PID" 2>/dev/null; then
    log "the host exited before it started:"; cat "$WORK/host.log" >&2; exit 1
  fi
  # PORT=0: the host picks a free port and names it in its "host started" line.
  BASE="$(sed -n 's/.*"msg":"host started","url":"\([^"]*\)".*/\1/p' "$WORK/host.log" | head -n 1)"
  [[ -n "$BASE" ]] && curl -fsS -o /dev/null "$BASE/api/healthz" 2>/dev/null && break
  BASE=""
  sleep 0.1
done
[[ -n "$BASE" ]] || { log "the host did not answer /api/healthz within 30 s:"; cat "$WORK/host.log" >&2; exit 1; }
log "host $BASE (pid $HOST_PID, Azurite data in $WORK/azurite)"

SCHEMA="${FUZZ_SCHEMA:-$BASE/api/openapi.json}"
if [[ "$SCHEMA" == http* ]] && ! curl -fsS -o /dev/null "$SCHEMA"; then
  log "$SCHEMA is not served"; exit 1
fi
mkdir -p "$REPORT_DIR"

remaining() { local left=$((deadline - $(date +%s))); ((left > 5)) && echo "$left" || echo 5; }

# run NAME credentials|anonymous ARGS...: one schemathesis run under what is left of the overall time
# limit. Its working directory is the temporary one, so nothing it writes lands in the repository.
run() {
  local name=$1 credentials=$2
  shift 2
  local status=0 config=() hooks=()
  ran+=("$name")
  if [[ "$credentials" == credentials ]]; then
    config=(--config-file "$WORK/auth.toml")
    hooks=(PYTHONPATH="$ROOT/scripts" SCHEMATHESIS_HOOKS=fuzz_hooks)
  fi
  log "phase $name: schemathesis ${config[*]} run $SCHEMA --origin $BASE --seed $SEED $*"
  (cd "$WORK" && env "${hooks[@]}" timeout --kill-after=10 "$(remaining)" "$ST" "${config[@]}" run "$SCHEMA" --origin "$BASE" --seed "$SEED" \
    --generation-database none --no-color --workers "$WORKERS" --request-timeout 30 \
    --report junit,ndjson --report-junit-path "$REPORT_DIR/$name.junit.xml" --report-ndjson-path "$REPORT_DIR/$name.ndjson" \
    "$@") || status=$?
  if ((status == 124 || status == 137)); then log "phase $name: stopped by the overall time limit (${TIMEOUT_SECONDS}s)"; fi
  return "$status"
}

# Objects for the path parameters to name (`fuzz`, `default/fuzz`), so that requests reach the handlers
# behind the 404 of an unknown name: a binding's why and status, a policy's acknowledge, a drain.
cat >"$WORK/seed.yaml" <<'YAML'
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: { name: fuzz, labels: { fuzz: "true" } }
spec: {}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: { name: fuzz-b, labels: { fuzz: "true" } }
spec: {}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: { name: fuzz }
spec:
  targetCluster: { labelSelector: { matchLabels: { fuzz: "true" } } }
  matchConditions:
    - { conditionType: Ready, operator: In, statusValues: ["False", "Unknown"] }
  taintsToAdd:
    - { key: fuzz/not-ready, effect: NoExecute, addOnMatchSeconds: 300, removeOnMismatchSeconds: 300 }
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: { name: fuzz, namespace: default }
spec:
  resourceSelectors: [{ apiVersion: apps/v1, kind: Deployment, name: fuzz }]
  placement: { clusterAffinity: { clusterNames: [fuzz, fuzz-b] } }
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: { name: fuzz }
spec:
  resourceSelectors: [{ apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: fuzz }]
  placement: { clusterAffinity: { clusterNames: [fuzz, fuzz-b] } }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: fuzz, namespace: default }
spec: { replicas: 1, selector: { matchLabels: { app: fuzz } }, template: { metadata: { labels: { app: fuzz } }, spec: { containers: [{ name: fuzz, image: nginx }] } } }
---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: { name: fuzz, namespace: default }
spec:
  resource: { apiVersion: apps/v1, kind: Deployment, name: other, namespace: default }
  clusters: [{ name: fuzz, replicas: 1 }]
---
apiVersion: work.karmada.io/v1alpha2
kind: ClusterResourceBinding
metadata: { name: fuzz }
spec:
  resource: { apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: other }
  clusters: [{ name: fuzz }]
---
apiVersion: failover.io/v1alpha1
kind: FailoverBudget
metadata: { name: fuzz, namespace: default }
spec: { selector: { matchLabels: { app: fuzz } }, maxInFlight: 1 }
YAML
seeded="$(curl -sS -o "$WORK/seed.out" -w '%{http_code}' -X POST "$BASE/api/apply" -H "Authorization: Bearer $ADMIN_TOKEN" \
  -H 'content-type: application/yaml' --data-binary @"$WORK/seed.yaml" || true)"
if [[ "$seeded" != 200 ]]; then
  log "applying the seed objects answered ${seeded:-nothing}: $(cat "$WORK/seed.out" 2>/dev/null)"
  grep '"unhandled error"' "$WORK/host.log" | head -n 5 >&2 || true
  exit 1
fi

# Each secured operation gets the secret of the scheme the document names for it (the values are read from
# the environment, so they are in no file); health reports are signed by scripts/fuzz_hooks.py with a key
# derived from REPORTER_SIGNING_KEY, as a cluster's reporter would. Half the names drawn for a path or query parameter are
# the seed objects'. The file is not named schemathesis.toml, which schemathesis would also pick up by
# itself in the unauthenticated phase.
cat >"$WORK/auth.toml" <<'TOML'
[auth.openapi.adminToken]
bearer = "${ADMIN_TOKEN}"
[auth.openapi.alertmanagerToken]
bearer = "${ALERTMANAGER_TOKEN}"
[auth.openapi.azureMonitorToken]
api_key = "${AZURE_MONITOR_TOKEN}"
# Placeholders that scripts/fuzz_hooks.py replaces with a report's real timestamp and signature.
[auth.openapi.clusterSignature]
api_key = "fuzz-sign-me"
[auth.openapi.clusterSignatureTimestamp]
api_key = "fuzz-sign-me"

[dictionaries.names]
values = ["fuzz"]
[dictionaries.namespaces]
values = ["default"]
[dictionaries.kinds]
values = ["Deployment", "ClusterRole"]
[dictionaries.apiversions]
values = ["apps/v1", "rbac.authorization.k8s.io/v1"]

[parameters]
"path.name" = { dictionary = "names", probability = 0.5 }
"path.cluster" = { dictionary = "names", probability = 0.5 }
"path.namespace" = { dictionary = "namespaces", probability = 0.5 }
"query.name" = { dictionary = "names", probability = 0.5 }
"query.cluster" = { dictionary = "names", probability = 0.5 }
"query.namespace" = { dictionary = "namespaces", probability = 0.5 }
"query.kind" = { dictionary = "kinds", probability = 0.5 }
"query.apiVersion" = { dictionary = "apiversions", probability = 0.5 }
TOML

CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
status=0
ran=()
failed=()
# Phase 1, with credentials: no 5xx, and every answer (status, Content-Type, body) as the document says;
# ignored_auth also sends each secured operation without its credentials and expects a refusal. DELETE
# waits for phase 2, so that the seed objects are there for every other operation.
run authenticated credentials --max-examples "$MAX_EXAMPLES" --exclude-method DELETE \
  --checks "$CHECKS,ignored_auth" || { status=$?; failed+=(authenticated); }
# Phase 2, DELETE with credentials (schemathesis fails a run that selects no operation: a stand-in
# document given as FUZZ_SCHEMA may have none).
if python3 -c 'import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1]) if "://" in sys.argv[1] else open(sys.argv[1]) as f:
    sys.exit(0 if any("delete" in ops for ops in json.load(f)["paths"].values()) else 1)' "$SCHEMA"; then
  run delete credentials --max-examples "$MAX_EXAMPLES" --include-method DELETE \
    --checks "$CHECKS,ignored_auth" || { status=$?; failed+=(delete); }
fi
# Phase 3, no credentials at all: what needs a secret answers a documented 401, and nothing is a 5xx.
run anonymous anonymous --max-examples 10 --phases fuzzing --checks "$CHECKS" || { status=$?; failed+=(anonymous); }

if ! kill -0 "$HOST_PID" 2>/dev/null; then
  log "the host died during the run; its last lines:"
  tail -n 20 "$WORK/host.log" >&2
  failed+=(host)
fi
# The host's own view of any 500: the stack that the response hides.
if grep -q '"unhandled error"' "$WORK/host.log"; then
  log "the host logged unhandled errors (first 5):"
  grep '"unhandled error"' "$WORK/host.log" | head -n 5 >&2
fi

elapsed=$(($(date +%s) - started_at))
cat >&2 <<EOF

== API fuzzing summary ==
schemathesis $SCHEMATHESIS_VERSION, seed $SEED, $MAX_EXAMPLES examples per operation, ${elapsed}s
schema:     $SCHEMA
phases:     ${ran[*]}
verdict:    $( ((${#failed[@]} == 0)) && echo passed || echo "FAILED in ${failed[*]} (exit $status)")
reports:    $REPORT_DIR (JUnit and NDJSON per phase)
reproduce:  FUZZ_SEED=$SEED FUZZ_MAX_EXAMPLES=$MAX_EXAMPLES bash scripts/fuzz.sh
EOF
((${#failed[@]} == 0))
