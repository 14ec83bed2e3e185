// The client every example uses: SLUICE_URL (default http://localhost:8080, what `make run` starts) and
// SLUICE_API_KEY (default: the key `make run` wrote to data/default-api-key on its first boot).
// In your own project: import { SluiceClient } from '@sluice/client';
import fs from 'node:fs';
import { SluiceClient } from '../clients/typescript/src/index.js';

function apiKey(): string {
  if (process.env.SLUICE_API_KEY) return process.env.SLUICE_API_KEY;
  try {
    return fs.readFileSync('data/default-api-key', 'utf8').trim();
  } catch {
    console.error('Set SLUICE_API_KEY (or run the examples from the repository root after `make run`).');
    process.exit(2);
  }
}

export const client = new SluiceClient({ url: process.env.SLUICE_URL ?? 'http://localhost:8080', apiKey: apiKey() });
