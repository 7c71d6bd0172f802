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

# Node's compile cache, filled while the image is built (docs/adr/0030): every start of a container
# reads the stripped and compiled form of the modules instead of making it again in each thread.
# Node keeps a folder per user inside it, so it is filled as the user the container runs as; the
# cache is keyed by each file's content.
ENV NODE_COMPILE_CACHE=/app/.node-compile-cache
RUN mkdir /app/.node-compile-cache && chown 65532:65532 /app/.node-compile-cache

# Unprivileged: the DNS server listens on 5353 (the Service maps 53 to it); no capabilities needed.
USER 65532:65532
RUN node src/cli/main.ts help >/dev/null \
 && node --input-type=module -e "await import('/app/src/cli/operator.ts'); await import('/app/src/cli/server.ts')"
EXPOSE 5353/udp 5353/tcp 8080/tcp
ENTRYPOINT ["node", "src/cli/main.ts"]
CMD ["help"]
