# syntax=docker/dockerfile:1
# Sluice: a multi-stage build. `build` compiles the server (tsc → dist/) and the dashboard (ui/dist/) with
# every dependency; `deps` installs the production dependencies alone; the final image holds those two
# results, runs as the unprivileged `node` user with plain node (no tsx, no compiler) and checks
# /health/ready. It needs JWT_SECRET (NODE_ENV=production); see docs/operations.md.
# Debian trixie (glibc 2.41): the newer uWebSockets.js build (20.57, glibc >= 2.38) loads there, which answers
# malformed HTTP (unknown methods, NUL in headers, too many headers) with a status and closes WebSockets that
# send unmasked frames; on bookworm (glibc 2.36) only 20.30 loads, which drops those connections silently
# (docs/api.md, Input limits). Node 22: a maintained line that 20.57 supports (Node 20–25); CI tests on Node 20.
ARG NODE_IMAGE=node:22-trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY Makefile tsconfig.json tsconfig.build.json ./
COPY src src
COPY ui ui
RUN make build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    GRPC_PORT=50051 \
    DATA_DIR=/data \
    LOG_FORMAT=json
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/ui/dist ui/dist
COPY package.json ./
COPY proto proto
# The embedded store (when DATABASE_URL is unset), the first API key and nothing else are written here.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 50051
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=32", "dist/main.js"]
