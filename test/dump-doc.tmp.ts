import fs from 'node:fs';
import { startTestNode } from './helpers.js';
const n = await startTestNode();
const r = await n.api.as('').get('/api/v1/openapi.json');
fs.writeFileSync('/tmp/openapi.json', JSON.stringify(r.body, null, 2));
await n.stop();
