# syntax=docker/dockerfile:1
# The relayer: compiled in a build stage, run from a production install (`npm ci --omit=dev`) by a
# non-root user. Configuration and keystores are mounted at /config (CONFIG_PATH), the embedded
# database and the generated API key live in the /data volume (DATA_DIR). compose.yaml runs two of
# these on PostgreSQL and Redis. The commands are the ones CI runs (.ci/run, scripts/node-lines.mjs).
# The Node line is the one package.json pins (devDependencies' node), which npm scripts and CI run on.
ARG NODE_VERSION=26

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN npm ci --no-audit --no-fund
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    METRICS_PORT=8081 \
    CONFIG_PATH=/config/config.json \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/generate.mjs scripts/build.mjs ./scripts/
RUN npm ci --omit=dev --legacy-peer-deps --no-audit --no-fund && npm cache clean --force
COPY prisma ./prisma
COPY --from=build /app/dist ./dist
# /config is where compose mounts config.json and keys/; /data must be the service's to write.
RUN mkdir -p /data /config && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/api/v1/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
CMD ["node", "--max-semi-space-size=64", "dist/main.js"]
