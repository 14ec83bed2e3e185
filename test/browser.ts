// Debian's chromium driven by playwright-core (no browser download: the machine's /usr/bin/chromium). The
// flags keep it off the network it cannot reach here (background services, component updates, QUIC) and
// give every launch a fresh, throw-away profile.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null. In CI a missing browser is a failure, not a skip. */
export function browserMissing(): string | null {
  if (fs.existsSync(CHROMIUM)) return null;
  const why = `${CHROMIUM} is missing (apt-get install -y chromium; .ci/run installs it)`;
  if (process.env.CI) throw new Error(why);
  return why;
}

export interface BrowserSession {
  context: BrowserContext;
  /** A new tab. The dashboard keeps its session in the tab's memory, so each tab signs in on its own. */
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<BrowserSession> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-chromium-'));
  // playwright passes the profile as --user-data-dir itself (it refuses the flag in `args`).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1360, height: 860 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    newPage: () => context.newPage(),
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
