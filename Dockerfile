# syntax=docker/dockerfile:1

FROM node:24-bookworm-slim AS build
WORKDIR /app
# Dependencies first, so a source change reuses this layer. No install script needs to run:
# better-sqlite3 13 ships its native addon prebuilt (Node-API, linux-x64 and arm64, glibc and
# musl) inside the package, and protobufjs's script is a version check. `prepare` (the tsc build)
# needs the sources and runs below.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
# MALLOC_ARENA_MAX and the node flags in CMD are those of `npm start` (package.json); a test
# keeps them the same. docs/deployment.md explains them.
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=32768 \
    DATABASE_URL=sqlite:/data/agent.db \
    MEMORY_DIR=/data/memory \
    WORKSPACE_DIR=/data/workspace \
    PORT=8080
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
# dist/migrations holds the compiled migrations; the service runs them at start-up.
COPY --from=build /app/dist ./dist
# The directory must exist and belong to node before VOLUME, so a new named volume inherits it.
RUN mkdir -p /data/memory /data/workspace && chown -R node:node /data
VOLUME /data
USER node
EXPOSE 8080
# The start period covers the longest start-up: waiting up to 30 s for a stopping Koroku's SQLite
# lock (docs/deployment.md), then migrations.
HEALTHCHECK --interval=30s --timeout=5s --start-period=45s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"]
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=20", "dist/src/main.js"]
