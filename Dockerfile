# The gateway image, on Node 24 (the LTS line). No build step: tsx runs the TypeScript sources.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
# The admin listener (/healthz, /readyz, /metrics) binds 127.0.0.1 by default; in a container the orchestrator's
# probes and `-p 9090:9090` arrive on the container's own interface, so the image listens on all of them.
# The container network is the boundary: publish or expose port 9090 only where probes and Prometheus run.
ENV ADMIN_HOST=0.0.0.0
# One edge worker per CPU of the container's quota once REDIS_URL gives them shared buckets; without REDIS_URL, `auto`
# runs one edge process (a number above 1 would refuse to start). See docs/edge.md "Workers".
ENV WORKERS=auto
# git: a deployment's build clones its repository (the slim image has none); ca-certificates for https remotes.
# npm (in the base image) installs an app's own dependencies at build time. bubblewrap: the sandbox of each revision
# (SANDBOX=auto uses it where the container may create user namespaces; else the gateway says so at start). passt
# (pasta) and iproute2: each revision's network namespace with egress (SANDBOX_NETWORK=auto, same condition).
RUN apt-get update \
  && apt-get install -y --no-install-recommends git ca-certificates bubblewrap passt iproute2 \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY rules ./rules
COPY examples ./examples
# Fail the build on invalid rule files rather than at the first start.
RUN node bin/gateway.js check rules/us.yaml rules/eu.yaml
# Builds and their kept folders (BUILD_WORK_DIR): mount a volume here so a restarted container serves its
# deployments again without rebuilding (with REDIS_URL).
ENV BUILD_WORK_DIR=/var/lib/gateway/builds
RUN mkdir -p /var/lib/gateway/builds && chown -R node:node /var/lib/gateway
USER node
EXPOSE 8080 9090
HEALTHCHECK --interval=10s --timeout=2s CMD node -e "fetch('http://127.0.0.1:'+(process.env.ADMIN_PORT||9090)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The same node flags as `npm start` (package.json; a test keeps the two equal).
ENTRYPOINT ["node", "--max-semi-space-size=64", "bin/gateway.js"]
CMD ["start"]
