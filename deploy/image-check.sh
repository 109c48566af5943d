#!/usr/bin/env bash
# The container image is proven, not assumed. Without a Docker daemon: makes a Bun base image with the layout of
# oven/bun (Debian bookworm from the archive this machine's apt uses, Bun from npm, a `bun` user, this machine's CA
# bundle), builds the Dockerfile on it with buildah (chroot isolation), then starts the image's own command as the
# image's own user and checks /healthz, /readyz, the API (401, then 200 with a key made by the image's admin command),
# the console's sign-in page, the embedded database under /data surviving a restart, and SIGTERM ending the process
# within 10 s. Prints the image size, the build time and the time to the first answer. Any failed check: exit 1.
#
#   sudo deploy/image-check.sh            # as root; installs buildah, debootstrap and curl with apt-get if missing
#
# The base is kept in buildah's storage (/var/lib/containers) and reused; BASE_REBUILD=1 makes it again.
# Settings: BASE_IMAGE (default localhost/decoy-bun-base), IMAGE (default localhost/decoy-incident-service:check).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE_IMAGE="${BASE_IMAGE:-localhost/decoy-bun-base}"
IMAGE="${IMAGE:-localhost/decoy-incident-service:check}"
SUITE=bookworm
STOP_LIMIT_S=10
START_LIMIT_S=120

say() { echo "image-check: $*"; }
fail() {
  echo "image-check: FAILED: $*" >&2
  exit 1
}
now_ms() { date +%s%3N; }
secs() { # secs <ms>: "12.3 s"
  awk -v ms="$1" 'BEGIN { printf "%.1f s", ms / 1000 }'
}

[ "$(id -u)" -eq 0 ] || fail "run as root (buildah's chroot isolation and debootstrap need it)"

missing=()
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null ||
    fail "could not install ${missing[*]}"
fi
command -v bun >/dev/null 2>&1 || fail "bun is needed on this machine (to read the image's JSON)"
command -v npm >/dev/null 2>&1 || fail "npm is needed on this machine (Bun for the base comes from npm)"

# The Bun version is the Dockerfile's (its FROM tags; test/deploy/files.test.ts keeps it equal to CI's).
BUN_VERSION=$(sed -nE 's/^FROM \$\{BUN_IMAGE\}:([0-9]+\.[0-9]+\.[0-9]+)( .*)?$/\1/p' Dockerfile | head -1)
[ -n "$BUN_VERSION" ] || fail "no 'FROM \${BUN_IMAGE}:<version>' line in the Dockerfile"
CA_BUNDLE="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "$CA_BUNDLE" ] || fail "no CA bundle at $CA_BUNDLE"

work=$(mktemp -d /tmp/image-check.XXXXXX)
containers=()
run_pid=""
service_pid=""
descendants() { # descendants <pid>: its children, theirs, and so on
  local child
  for child in $(ps -e -o pid=,ppid= | awk -v p="$1" '$2 == p { print $1 }'); do
    echo "$child"
    descendants "$child"
  done
}
cleanup() {
  # A check failed with the service up: SIGTERM, then whatever is left (the embedded PostgreSQL too) is killed.
  if [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null; then
    [ -z "$service_pid" ] || kill -TERM "$service_pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$run_pid" 2>/dev/null || break
      sleep 0.1
    done
    # shellcheck disable=SC2046
    kill -KILL $(descendants "$run_pid") "$run_pid" 2>/dev/null || true
  fi
  for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work" 2>/dev/null || (sleep 1 && rm -rf "$work")
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# --- The base: same layout as oven/bun ------------------------------------------------------------------------------

# The Debian archive this machine's apt uses (deb822 .sources or one-line sources.list), else deb.debian.org.
debian_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ { u = $2 } /^Suites:/ && / '"$SUITE"'( |$)/ && u != "" { print u; exit }' || true)
  [ -n "$uri" ] || uri=$(grep -hE "^deb\s+(\[[^]]*\]\s+)?\S+\s+$SUITE\s" /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    2>/dev/null | grep -v security | head -1 | sed -E 's/^deb\s+(\[[^]]*\]\s+)?(\S+).*/\2/' || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

npm_arch() {
  case "$(uname -m)" in
    x86_64) echo x64 ;;
    aarch64 | arm64) echo aarch64 ;;
    *) fail "no Bun build for $(uname -m)" ;;
  esac
}

make_base() {
  local mirror ctr mnt started
  started=$(now_ms)
  mirror=$(debian_mirror)
  say "making the base ${BASE_IMAGE}:${BUN_VERSION}: Debian ${SUITE} from ${mirror}, Bun ${BUN_VERSION} from npm"
  ctr=$(buildah from scratch)
  containers+=("$ctr")
  mnt=$(buildah mount "$ctr")
  debootstrap --variant=minbase "$SUITE" "$mnt" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    {
      tail -20 "$work/debootstrap.log" >&2
      fail "debootstrap"
    }

  # Bun: the platform package the `bun` npm package installs (bin/bun).
  (cd "$work" && npm pack --silent "@oven/bun-linux-$(npm_arch)@${BUN_VERSION}" >/dev/null) || fail "npm pack bun"
  tar -xzf "$work"/oven-bun-linux-*.tgz -C "$work"
  install -m 0755 "$work/package/bin/bun" "$mnt/usr/local/bin/bun"
  ln -sf bun "$mnt/usr/local/bin/bunx"
  mkdir -p "$mnt/usr/local/bun-node-fallback-bin"
  ln -sf /usr/local/bin/bun "$mnt/usr/local/bun-node-fallback-bin/node"

  # The registries here are reached over TLS that only this machine's bundle trusts (else bun install fails with
  # SELF_SIGNED_CERT_IN_CHAIN); minbase has no ca-certificates package, so this bundle is the image's.
  mkdir -p "$mnt/etc/ssl/certs"
  cp "$CA_BUNDLE" "$mnt/etc/ssl/certs/ca-certificates.crt"

  # oven/bun's entrypoint: a first argument that is an option, or no command, goes to bun.
  cat >"$mnt/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ]; then
  set -- bun "$@"
fi
exec "$@"
EOF
  chmod 0755 "$mnt/usr/local/bin/docker-entrypoint.sh"

  chroot "$mnt" /bin/sh -c 'groupadd bun --gid 1000 && useradd bun --uid 1000 --gid bun --shell /bin/sh --create-home &&
    mkdir -p /home/bun/app && chown bun:bun /home/bun/app && bun --version >/dev/null' ||
    fail "the base's bun user or bun"
  rm -rf "$mnt"/var/lib/apt/lists/* "$mnt"/var/cache/apt/*.bin "$mnt"/var/cache/apt/archives/*.deb \
    "$mnt"/usr/share/doc/* "$mnt"/usr/share/man/* "$mnt"/var/log/*.log

  buildah config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/bun-node-fallback-bin \
    --env BUN_RUNTIME_TRANSPILER_CACHE_PATH=0 \
    --env BUN_INSTALL_BIN=/usr/local/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    --workingdir /home/bun/app \
    --entrypoint '["/usr/local/bin/docker-entrypoint.sh"]' \
    --cmd /usr/local/bin/bun \
    --label "org.opencontainers.image.description=Debian ${SUITE} (${mirror}) with Bun ${BUN_VERSION} from npm" \
    "$ctr"
  buildah unmount "$ctr" >/dev/null
  buildah commit --quiet --rm "$ctr" "${BASE_IMAGE}:${BUN_VERSION}" >/dev/null
  containers=("${containers[@]/$ctr/}")
  buildah tag "${BASE_IMAGE}:${BUN_VERSION}" "${BASE_IMAGE}:${BUN_VERSION}-slim"
  say "base made in $(secs $(($(now_ms) - started)))"
}

if [ "${BASE_REBUILD:-0}" != 1 ] && buildah inspect --type image "${BASE_IMAGE}:${BUN_VERSION}" >/dev/null 2>&1 &&
  buildah inspect --type image "${BASE_IMAGE}:${BUN_VERSION}-slim" >/dev/null 2>&1; then
  say "base ${BASE_IMAGE}:${BUN_VERSION} is cached (BASE_REBUILD=1 makes it again)"
else
  make_base
fi

# --- The project's image ----------------------------------------------------------------------------------------------

say "building the Dockerfile on ${BASE_IMAGE}"
previous=$(buildah images --format '{{.ID}}' "$IMAGE" 2>/dev/null | head -1 || true)
started=$(now_ms)
# --layers: an unchanged lockfile reuses the dependency layer on the next run.
buildah bud --isolation chroot --layers --pull-never --build-arg "BUN_IMAGE=${BASE_IMAGE}" -t "$IMAGE" -f Dockerfile . \
  >"$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2
  fail "buildah bud"
}
build_ms=$(($(now_ms) - started))
# The previous run's image, now untagged, would pile up on a CI machine (its layers the new one shares stay).
current=$(buildah images --format '{{.ID}}' "$IMAGE" | head -1)
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi
size=$(buildah images --format '{{.Size}}' "$IMAGE" | head -1)
[ -n "$size" ] || fail "no size for ${IMAGE}"
say "built ${IMAGE} in $(secs "$build_ms"), ${size}"

# The image's own command (ENTRYPOINT + CMD) and user, as a container engine would start it.
config=$(buildah inspect --type image "$IMAGE")
mapfile -d '' command_argv < <(echo "$config" | bun -e '
  const c = JSON.parse(await Bun.stdin.text()).OCIv1.config
  process.stdout.write([...(c.Entrypoint ?? []), ...(c.Cmd ?? [])].map((a) => a + "\0").join(""))')
image_user=$(echo "$config" | bun -e 'console.log(JSON.parse(await Bun.stdin.text()).OCIv1.config.User ?? "")')
[ "${#command_argv[@]}" -gt 0 ] || fail "the image has no command"
[ -n "$image_user" ] && [ "$image_user" != root ] && [ "$image_user" != 0 ] || fail "the image runs as root"
say "command: ${command_argv[*]} as ${image_user}"

ctr=$(buildah from --pull-never "$IMAGE")
containers+=("$ctr")
mnt=$(buildah mount "$ctr")
uid=$(awk -F: -v u="${image_user%%:*}" '$1 == u || $3 == u { print $3 ":" $4; exit }' "$mnt/etc/passwd")
[ -n "$uid" ] || fail "user ${image_user} is not in the image's /etc/passwd"
buildah unmount "$ctr" >/dev/null
# The image's VOLUME /data is given to the -v below instead: buildah 1.28's run otherwise mounts its own anonymous
# volume there (or mixes up the targets of several -v).
buildah config --volume /data- "$ctr"

# /data as a volume on this machine, owned by the image's user with the image's mode, so it outlives the container.
data="$work/data"
mkdir -p "$data"
chown "$uid" "$data"
chmod 0700 "$data"

# chroot isolation shares this machine's network: free ports instead of the defaults (other services may hold them).
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && ! grep -q ":$(printf '%04X' "$port") " /proc/net/tcp /proc/net/tcp6; then
      echo "$port"
      return
    fi
  done
}
PORT=$(free_port) INGEST_PORT=$(free_port) CONSOLE_PORT=$(free_port) OPS_PORT=$(free_port)
api="http://127.0.0.1:${PORT}" console="http://127.0.0.1:${CONSOLE_PORT}" ops="http://127.0.0.1:${OPS_PORT}"

in_image() { # in_image <argv...>: a command in the container as the image's user, with the same /data
  buildah run --isolation chroot --user "$image_user" -v "$data:/data" \
    --env "PORT=$PORT" --env "INGEST_PORT=$INGEST_PORT" --env "CONSOLE_PORT=$CONSOLE_PORT" --env "OPS_PORT=$OPS_PORT" \
    --env "APP_URL=$console" --env "BASE_URL=$api" --env "LOG_LEVEL=${LOG_LEVEL:-info}" \
    "$ctr" -- "$@"
}

status_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }
expect_status() { # expect_status <what> <code> <curl args...>
  local what="$1" want="$2" got
  shift 2
  got=$(status_of "$@")
  [ "$got" = "$want" ] || {
    tail -30 "$work/service.log" >&2
    fail "$what: $got, expected $want"
  }
  say "ok: $what $got"
}

first_answer_ms=0 ready_ms=0
start_service() { # start_service <label>: the image's command; waits for /healthz 200
  local started
  started=$(now_ms)
  in_image "${command_argv[@]}" >>"$work/service.log" 2>&1 &
  run_pid=$!
  service_pid=""
  while :; do
    kill -0 "$run_pid" 2>/dev/null || {
      tail -30 "$work/service.log" >&2
      fail "$1: the command ended before answering"
    }
    [ $(($(now_ms) - started)) -lt $((START_LIMIT_S * 1000)) ] || fail "$1: no /healthz 200 within ${START_LIMIT_S} s"
    [ "$(status_of "$ops/healthz")" = 200 ] && break
    sleep 0.1
  done
  first_answer_ms=$(($(now_ms) - started))
  # /healthz answers while migrations still run; /readyz turns 200 when the service takes requests.
  while [ "$(status_of "$ops/readyz")" != 200 ]; do
    [ $(($(now_ms) - started)) -lt $((START_LIMIT_S * 1000)) ] || fail "$1: no /readyz 200 within ${START_LIMIT_S} s"
    sleep 0.1
  done
  ready_ms=$(($(now_ms) - started))
  # The service itself (bin/serve execs bun): the process a container engine's SIGTERM reaches.
  service_pid=$(ps -e -o pid=,args= | awk -v mnt="$mnt" '/dist\/server\/main\.js/ && !/awk/ { print $1 }' |
    while read -r pid; do
      p=$pid
      while [ "$p" -gt 1 ]; do
        if [ "$p" = "$run_pid" ]; then
          echo "$pid"
          break
        fi
        p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null || echo 1)
      done
    done | head -1)
  [ -n "$service_pid" ] || fail "$1: no service process under buildah run"
  local runs_as
  runs_as=$(ps -o uid= -p "$service_pid" | tr -d ' ')
  [ "$runs_as" = "${uid%%:*}" ] || fail "$1: the service runs as uid ${runs_as}, not ${image_user}"
  say "ok: $1: /healthz 200 after $(secs "$first_answer_ms"), /readyz 200 after $(secs "$ready_ms") (service pid ${service_pid}, user uid ${uid%%:*})"
}

stop_service() { # stop_service <label>: SIGTERM to the service; it must end, with status 0, within 10 s
  local started status
  started=$(now_ms)
  kill -TERM "$service_pid"
  while kill -0 "$run_pid" 2>/dev/null; do
    [ $(($(now_ms) - started)) -lt $((STOP_LIMIT_S * 1000)) ] || fail "$1: still running ${STOP_LIMIT_S} s after SIGTERM"
    sleep 0.1
  done
  status=0
  wait "$run_pid" || status=$?
  [ "$status" -eq 0 ] || {
    tail -30 "$work/service.log" >&2
    fail "$1: exit status ${status} after SIGTERM"
  }
  say "ok: $1: SIGTERM ended the service in $(secs $(($(now_ms) - started))), status 0"
  service_pid=""
}

start_service "first start"
first_start_ms=$first_answer_ms first_ready_ms=$ready_ms
expect_status "the API without a key" 401 "$api/v1/incidents"
expect_status "the console's sign-in page" 200 "$console/sign-in"

org=$(in_image bun run admin org create --name "Image check" --json 2>>"$work/admin.log" |
  bun -e 'console.log(JSON.parse(await Bun.stdin.text()).id)') || {
  cat "$work/admin.log" >&2
  fail "admin org create"
}
key=$(in_image bun run admin key create --org "$org" --name image-check --scopes incidents:read,events:read --json \
  2>>"$work/admin.log" | bun -e 'console.log(JSON.parse(await Bun.stdin.text()).key)') || {
  cat "$work/admin.log" >&2
  fail "admin key create"
}
expect_status "the API with the admin command's key" 200 -H "Authorization: Bearer $key" "$api/v1/incidents"

[ -f "$data/pg/PG_VERSION" ] || fail "no embedded database under /data/pg"
[ "$(stat -c '%u:%g' "$data/pg")" = "$uid" ] || fail "/data/pg is not owned by ${image_user}"
say "ok: embedded PostgreSQL $(cat "$data/pg/PG_VERSION") in /data/pg, owned by ${image_user}"

stop_service "first stop"
start_service "restart"
expect_status "/readyz after the restart" 200 "$ops/readyz"
expect_status "the same key after the restart (the database in /data survived)" 200 \
  -H "Authorization: Bearer $key" "$api/v1/incidents"
stop_service "second stop"

echo "image-check: image ${IMAGE}: ${size}; build $(secs "$build_ms"); first answer (/healthz 200) $(secs "$first_start_ms") on a fresh /data (ready $(secs "$first_ready_ms")), $(secs "$first_answer_ms") on a restart (ready $(secs "$ready_ms"))"
echo "image-check: all checks passed"
