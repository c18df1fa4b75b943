# syntax=docker/dockerfile:1
# The Store Management Service image: the server (`node packages/server/dist/main.js`) and the admin
# CLI (`node packages/server/dist/svc.js`), production dependencies only, run as a non-root user.
# Build: `docker build -t svc .`; how to run it, in docs/deploy.md (the server needs SECRET_KEY and
# PUBLIC_URL, its OAuth issuer: production refuses to start without them).
#
# Stages: toolchain (Node and the compilers) -> manifests (what the install reads) -> build (full
# install and `pnpm build`) and tree (the production install and the build output, laid out by
# tools/image/runtime-tree.sh, which tools/image/test/runtime-tree.test.ts runs outside a container)
# -> runtime (the slim image with that tree).

FROM node:20.20.2-bookworm AS toolchain
# better-sqlite3 compiles from source with node-gyp when no prebuilt binary fits.
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ make python3 \
    && rm -rf /var/lib/apt/lists/*
# pnpm once, in npx's cache, for the stages below.
RUN npx -y pnpm@10 --version
COPY tools/image/runtime-tree.sh /usr/local/bin/runtime-tree

# Only the lockfile, the workspace files and the package.json files: the installs below are cached
# until one of them changes, not at every change of the sources.
FROM toolchain AS manifests
COPY . /src
RUN runtime-tree manifests /src /manifests

FROM toolchain AS build
WORKDIR /src
COPY --from=manifests /manifests ./
RUN npx -y pnpm@10 install --frozen-lockfile
COPY . .
RUN npx -y pnpm@10 build \
    && runtime-tree output /src /out

FROM toolchain AS tree
COPY --from=manifests /manifests /app
RUN runtime-tree install /app
COPY --from=build /out /app
RUN runtime-tree check /app

FROM node:20.20.2-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/app/data
WORKDIR /app
# The tree stays owned by root: the service reads it and cannot change it. Only DATA_DIR (SQLite)
# is writable, by the `node` user of the image (uid 1000).
COPY --from=tree /app ./
RUN install -d -o 1000 -g 1000 -m 0750 /app/data
# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 1000:1000
EXPOSE 3000
STOPSIGNAL SIGTERM
# Ready: the database answers, migrations are current, the instance is not stopping. No curl in the
# slim image: Node's fetch asks.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node itself is PID 1 (exec form, no shell): it gets SIGTERM and stops gracefully.
CMD ["node", "--enable-source-maps", "packages/server/dist/main.js"]
