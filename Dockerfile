# Zonekeeper: one image for `zonekeeper operator`, `zonekeeper server` and the other commands.
# TypeScript runs directly on Node 24's type stripping (docs/adr/0001), so there is no build step.
FROM node:24-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first (cached while only the source changes). The pinned `node` devDependency is not
# needed: the base image is Node 24.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

COPY bin ./bin
COPY src ./src

# Unprivileged: the DNS server listens on 5353 (the Service maps 53 to it); no capabilities needed.
USER 65532:65532
EXPOSE 5353/udp 5353/tcp 8080/tcp
ENTRYPOINT ["node", "src/cli/main.ts"]
CMD ["help"]
