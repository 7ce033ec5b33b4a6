import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The console's build (docs/console.md): sources in console/src, output in console/dist, served by
 * the API at /console (api/console.ts). Every asset is a file of this origin: no inline script, no
 * CDN, so the page runs under the same strict Content-Security-Policy as the share page.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // The graph pages load React Flow and dagre on demand (React.lazy): the runs list stays light.
    chunkSizeWarningLimit: 400,
    modulePreload: { polyfill: false },
  },
});
