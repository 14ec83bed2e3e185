// Builds the dashboard into ui/dist: one ES module bundle and one stylesheet under content-hashed names, an
// icon, and the index.html that names them. `make ui` runs it when a source changed; the node serves the
// result at /ui (src/io/http/routes/ui.ts). Everything comes from node_modules: nothing is fetched at run time.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const UI = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(UI, 'dist');
const ASSETS = path.join(OUT, 'assets');

fs.rmSync(OUT, { recursive: true, force: true });
fs.mkdirSync(ASSETS, { recursive: true });

const result = await esbuild.build({
  entryPoints: { app: path.join(UI, 'src/main.tsx') },
  outdir: ASSETS,
  entryNames: '[name]-[hash]',
  bundle: true,
  format: 'esm',
  // Browsers of the last few years: EventSource, fetch, ES2022 are all native.
  target: ['chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  sourcemap: 'linked',
  legalComments: 'eof',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => path.basename(p));
const pick = (ext: string): string => {
  const name = outputs.find((n) => n.startsWith('app-') && n.endsWith(ext));
  if (!name) throw new Error(`the build made no app-*${ext}`);
  return name;
};

const icon = fs.readFileSync(path.join(UI, 'src/icon.svg'));
const iconName = `icon-${createHash('sha256').update(icon).digest('hex').slice(0, 10)}.svg`;
fs.writeFileSync(path.join(ASSETS, iconName), icon);

// No inline script or style: the page's Content-Security-Policy allows neither.
fs.writeFileSync(
  path.join(OUT, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sluice</title>
<link rel="icon" type="image/svg+xml" href="/ui/assets/${iconName}">
<link rel="stylesheet" href="/ui/assets/${pick('.css')}">
<script type="module" src="/ui/assets/${pick('.js')}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The Sluice dashboard needs JavaScript.</noscript>
</body>
</html>
`,
);
console.log(`ui/dist: ${outputs.filter((n) => !n.endsWith('.map')).join(', ')}, ${iconName}`);
