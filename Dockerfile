# One image for the API, the worker and the snake demo service (docker-compose.yml picks the
# command). The services run compiled (`npm run build`: dist/, plain node, no loader thread), as
# the bench measures them; development runs the same TypeScript through tsx.
FROM node:20-slim

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. Dev dependencies are
# included on purpose: the build needs tsx and TypeScript (dev dependencies). npm ci can refuse a lock file
# that lacks other platforms' optional packages; npm install --no-save resolves the same tree
# (scripts/provision.sh does the same).
COPY package.json package-lock.json ./
RUN (npm ci --include=dev --no-audit --no-fund \
     || npm install --no-save --include=dev --no-audit --no-fund) \
 && npm cache clean --force

COPY . .

# Compiled services in dist/, and the workflow bundle (with the workflow interceptors) that the
# worker loads instead of running webpack at every start (scripts/build.ts).
RUN npm run build
ENV CORTEX_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    SNAKE_HOST=0.0.0.0

# Run as the image's unprivileged user; the app writes nothing to its own folder.
USER node
EXPOSE 8080 8090
CMD ["node", "dist/api/server.js"]
