// The web UI's build (into dist/web, served by `sandcell serve` at /) and its dev server (npm run dev).
import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

const target = process.env.SANDCELL_URL ?? 'http://127.0.0.1:8080';
const proxied = { target, changeOrigin: false, ws: false };

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [preact()],
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    // Everything as files: the page's CSP allows no inline script or style.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  server: {
    host: '127.0.0.1',
    port: Number(process.env.SANDCELL_WEB_PORT ?? 5173),
    strictPort: false,
    proxy: { '/v1': proxied, '/openapi.json': proxied, '/healthz': proxied },
  },
});
