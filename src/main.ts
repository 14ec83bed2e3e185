// Entry point: one node with the configuration from the environment. `make run` runs it through tsx;
// `make build` compiles it to dist/main.js for plain node.
import { ConfigError, loadConfig } from './config.js';
import { createLog } from './log.js';
import { startNode } from './node.js';

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(78);
  }
  throw err;
}
const log = createLog(config.logLevel, config.logFormat);
const node = await startNode({ config, log });

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: draining and stopping`);
    node.stop().then(
      () => process.exit(0),
      (err) => {
        log.error('stop failed', err);
        process.exit(1);
      },
    );
  });
}
