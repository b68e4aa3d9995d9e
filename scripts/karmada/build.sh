#!/usr/bin/env bash
# Builds a real Karmada control plane (and what it needs to run on loopback) from the Go module proxy, for
# the tests under test/karmada (see test/helpers/realKarmada.ts).
#
#   scripts/karmada/build.sh            # prints the bin directory on its last stdout line
#
# Everything goes into a cache OUTSIDE the repository, keyed by the pinned versions:
#   ${KARMADA_CACHE:-$HOME/.cache/cluster-failover/karmada}/<key>/
#     bin/       kube-apiserver kube-controller-manager kube-scheduler karmada-aggregated-apiserver
#                karmada-controller-manager karmada-scheduler karmada-webhook etcd kwok
#     crds/      Karmada's CRDs as shipped (charts/karmada/_crds/bases/**)
#     webhook-configuration.yaml   Karmada's webhook configurations as shipped (placeholders kept)
#     kwok-stages/                 kwok's "fast" node and pod stages
#     src/       the throwaway Go modules the binaries are built from
#     .complete  written last, only after every piece above exists
#
# Whatever already exists is skipped (a binary appears under its final name only once it is complete), so
# running it twice is cheap; concurrent runs serialize on a lock file. Needs Go (GOTOOLCHAIN=local is used)
# and network access to the Go module proxy for a cold build (about 9 minutes on 2 idle cores, much longer
# on a busy machine); the Go module and build caches then make a rebuild take seconds.
set -euo pipefail

KARMADA_VERSION=v1.18.2
K8S_VERSION=v1.35.4
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

CACHE_ROOT="${KARMADA_CACHE:-$HOME/.cache/cluster-failover/karmada}"
KEY="${KARMADA_VERSION}-k8s${K8S_VERSION#v}-etcd${ETCD_VERSION#v}-kwok${KWOK_VERSION#v}"
DIR="$CACHE_ROOT/$KEY"
BIN="$DIR/bin"
MARKER="$DIR/.complete"

# binary name → Go package (built together: the k8s.io packages compile once for all of them).
declare -A CONTROL_PLANE=(
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [karmada-aggregated-apiserver]=github.com/karmada-io/karmada/cmd/aggregated-apiserver
  [karmada-controller-manager]=github.com/karmada-io/karmada/cmd/controller-manager
  [karmada-scheduler]=github.com/karmada-io/karmada/cmd/scheduler
  [karmada-webhook]=github.com/karmada-io/karmada/cmd/webhook
)
ALL_BINS=("${!CONTROL_PLANE[@]}" etcd kwok)

log() { printf '[karmada-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

complete() {
  [[ -f "$MARKER" ]] || return 1
  local b
  for b in "${ALL_BINS[@]}"; do [[ -x "$BIN/$b" ]] || return 1; done
}
if complete; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$DIR"
exec 9>"$CACHE_ROOT/$KEY.lock"
if ! flock -n 9; then
  log "another build holds $CACHE_ROOT/$KEY.lock; waiting"
  flock 9
fi
# The other holder may have finished everything while we waited.
if complete; then
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false"
mkdir -p "$BIN" "$DIR/src"
started=$SECONDS

module_dir() { # prints the module cache directory of module@version, downloading it if needed
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p'
}
module_gomod() {
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
}

# --- the control-plane binaries: one module, one go build of whichever are missing ---------------------
missing=()
for b in "${!CONTROL_PLANE[@]}"; do [[ -x "$BIN/$b" ]] || missing+=("$b"); done
if [[ ${#missing[@]} -gt 0 ]]; then
  t0=$SECONDS
  src="$DIR/src/controlplane"
  rm -rf "$src" && mkdir -p "$src"
  log "control plane: ${missing[*]}; module in $src"
  (
    cd "$src"
    go mod init cluster-failover.local/karmada-controlplane >/dev/null 2>&1
    {
      echo '//go:build tools'
      echo
      echo '// Package tools only pins the commands built from this module.'
      echo 'package tools'
      echo
      echo 'import ('
      for b in "${!CONTROL_PLANE[@]}"; do echo "	_ \"${CONTROL_PLANE[$b]}\""; done | sort
      echo ')'
    } >tools.go
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and points them at ./staging in its own
    # go.mod, which does not carry over to a module importing it: pin each one to the matching v0.x.y.
    k8s_gomod="$(module_gomod "k8s.io/kubernetes@$K8S_VERSION")"
    staging_version="v0.${K8S_VERSION#v1.}"
    mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._/-]*\) => \./staging/.*#\1#p' "$k8s_gomod" | sort -u)
    [[ ${#staging[@]} -gt 0 ]] || { log "no staging replace lines found in $k8s_gomod"; exit 1; }
    log "control plane: ${#staging[@]} staging modules pinned to $staging_version"
    args=(-require="k8s.io/kubernetes@$K8S_VERSION" -require="github.com/karmada-io/karmada@$KARMADA_VERSION")
    for m in "${staging[@]}"; do args+=(-replace="$m=$m@$staging_version"); done
    go mod edit "${args[@]}"
    log "control plane: go mod tidy"
    go mod tidy
    ldflags="-s -w"
    ldflags+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
    ldflags+=" -X k8s.io/component-base/version.gitMajor=$(echo "${K8S_VERSION#v}" | cut -d. -f1)"
    ldflags+=" -X k8s.io/component-base/version.gitMinor=$(echo "${K8S_VERSION#v}" | cut -d. -f2)"
    ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
    ldflags+=" -X github.com/karmada-io/karmada/pkg/version.gitVersion=$KARMADA_VERSION"
    ldflags+=" -X github.com/karmada-io/karmada/pkg/version.gitTreeState=clean"
    packages=()
    for b in "${missing[@]}"; do packages+=("${CONTROL_PLANE[$b]}"); done
    out="$src/out"
    mkdir -p "$out"
    log "control plane: go build (the long part)"
    go build -trimpath -ldflags "$ldflags" -o "$out/" "${packages[@]}"
    # go build names each binary after its package's last element (Karmada's are plain "webhook", …).
    for b in "${missing[@]}"; do mv -f "$out/${CONTROL_PLANE[$b]##*/}" "$BIN/$b"; done
  )
  log "control plane: built in $((SECONDS - t0)) s"
fi

# --- etcd: a throwaway module requiring the server module (its root package is etcd's main) --------------
if [[ ! -x "$BIN/etcd" ]]; then
  t0=$SECONDS
  src="$DIR/src/etcd"
  rm -rf "$src" && mkdir -p "$src"
  (
    cd "$src"
    go mod init cluster-failover.local/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go build -trimpath -ldflags "-s -w" -o "$src/etcd" go.etcd.io/etcd/server/v3
    mv -f "$src/etcd" "$BIN/etcd"
  )
  log "etcd: built in $((SECONDS - t0)) s"
fi

# --- kwok: go install into a scratch GOBIN, then move into place ----------------------------------------
if [[ ! -x "$BIN/kwok" ]]; then
  t0=$SECONDS
  gobin="$DIR/src/kwok-bin"
  rm -rf "$gobin" && mkdir -p "$gobin"
  GOBIN="$gobin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv -f "$gobin/kwok" "$BIN/kwok"
  log "kwok: built in $((SECONDS - t0)) s"
fi

# --- assets from the module downloads ---------------------------------------------------------------------
copy_tree() { # src dst: copy, writable (the module cache is read-only), replacing dst atomically
  local tmp="$2.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$(dirname "$2")"
  cp -r "$1" "$tmp" && chmod -R u+w "$tmp"
  rm -rf "$2" && mv "$tmp" "$2"
}
if [[ ! -d "$DIR/crds" || ! -f "$DIR/webhook-configuration.yaml" ]]; then
  kdir="$(module_dir "github.com/karmada-io/karmada@$KARMADA_VERSION")"
  copy_tree "$kdir/charts/karmada/_crds/bases" "$DIR/crds"
  cp "$kdir/artifacts/deploy/webhook-configuration.yaml" "$DIR/webhook-configuration.yaml.tmp"
  chmod u+w "$DIR/webhook-configuration.yaml.tmp"
  mv -f "$DIR/webhook-configuration.yaml.tmp" "$DIR/webhook-configuration.yaml"
  log "assets: $(find "$DIR/crds" -name '*.yaml' | wc -l) CRD files, webhook-configuration.yaml"
fi
if [[ ! -d "$DIR/kwok-stages" ]]; then
  wdir="$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")"
  tmp="$DIR/kwok-stages.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  cp "$wdir/kustomize/stage/node/fast/node-initialize.yaml" \
    "$wdir/kustomize/stage/pod/fast/pod-ready.yaml" \
    "$wdir/kustomize/stage/pod/fast/pod-complete.yaml" \
    "$wdir/kustomize/stage/pod/fast/pod-delete.yaml" "$tmp/"
  chmod -R u+w "$tmp"
  rm -rf "$DIR/kwok-stages" && mv "$tmp" "$DIR/kwok-stages"
fi

for b in "${ALL_BINS[@]}"; do
  [[ -x "$BIN/$b" ]] || { log "missing $BIN/$b after the build"; exit 1; }
done
printf 'karmada %s\nkubernetes %s\netcd %s\nkwok %s\nbuilt %s in %s s\n' \
  "$KARMADA_VERSION" "$K8S_VERSION" "$ETCD_VERSION" "$KWOK_VERSION" "$(date -u +%FT%TZ)" "$((SECONDS - started))" >"$MARKER"
log "done in $((SECONDS - started)) s: $BIN"
echo "$BIN"
