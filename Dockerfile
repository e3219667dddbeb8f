# The gateway image. No build step: tsx runs the TypeScript sources.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY rules ./rules
USER node
ENTRYPOINT ["node", "bin/gateway.js"]
CMD ["check", "rules/us.yaml", "rules/eu.yaml"]
