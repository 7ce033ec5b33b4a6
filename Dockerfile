# One image for the API, the worker and the snake demo service (docker-compose.yml picks the
# command). TypeScript runs through tsx, as in development, so there is no separate build
# output to keep in step with the source.
FROM node:20-slim

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. Dev dependencies are
# included on purpose: tsx (a dev dependency) runs the services. npm ci can refuse a lock file
# that lacks other platforms' optional packages; npm install --no-save resolves the same tree
# (scripts/provision.sh does the same).
COPY package.json package-lock.json ./
RUN (npm ci --include=dev --no-audit --no-fund \
     || npm install --no-save --include=dev --no-audit --no-fund) \
 && npm cache clean --force

COPY . .

# The worker loads this prebuilt workflow bundle instead of running webpack at every start
# (worker/index.ts reads CORTEX_WORKFLOW_BUNDLE and falls back to bundling when it is absent).
ENV CORTEX_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
RUN node --input-type=module -e "\
  import { bundleWorkflowCode } from '@temporalio/worker'; \
  import { mkdirSync, writeFileSync } from 'node:fs'; \
  const { code } = await bundleWorkflowCode({ workflowsPath: '/app/workflows/index.ts' }); \
  mkdirSync('/app/dist', { recursive: true }); \
  writeFileSync(process.env.CORTEX_WORKFLOW_BUNDLE, code);"

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    SNAKE_HOST=0.0.0.0

# Run as the image's unprivileged user; the app writes nothing to its own folder.
USER node
EXPOSE 8080 8090
CMD ["npx", "tsx", "api/server.ts"]
