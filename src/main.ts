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
const started = startNode({ config, log });

// Listened for from the start: a signal while the node boots stops it once it has booted. A stop that hangs (a
// store that no longer answers) ends at STOP_TIMEOUT_MS, or at once on a second signal (a second Ctrl-C): what was
// acknowledged is committed already, and what was not, the clients send again.
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) {
      log.error(`${signal} again while stopping: exiting now`);
      process.exit(1);
    }
    stopping = true;
    log.info(`${signal}: draining and stopping`);
    setTimeout(() => {
      log.error(`the node did not stop within STOP_TIMEOUT_MS (${config.stopTimeoutMs} ms): exiting now`);
      process.exit(1);
    }, config.stopTimeoutMs).unref();
    started
      .then((node) => node.stop())
      .then(
        () => process.exit(0),
        (err) => {
          log.error('stop failed', err);
          process.exit(1);
        },
      );
  });
}
await started;
