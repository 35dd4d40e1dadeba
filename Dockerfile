# Klea: one image for the worker and the API (the command picks which).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
# bubblewrap: every run_command runs in its sandbox; prlimit (util-linux) caps its memory and processes.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap util-linux \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production KLEA_PROJECT_DIR=/workspace
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/web ./web
COPY klea.example.yaml ./
# The image runs as `node`, not root: the directories it writes are its own (a named volume mounted on one of them
# starts with this ownership).
RUN mkdir -p /workspace /var/lib/klea/workspace-state /var/lib/klea/results /app/.klea \
  && chown -R node:node /workspace /var/lib/klea /app/.klea
USER node
# The worker by default; the API with: node dist/api/index.js
CMD ["node", "dist/worker/index.js"]
