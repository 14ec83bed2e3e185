// What route handlers are given: the actor pool, the store (reads), configuration and job routing.
import type { Config } from '../../../config.js';
import type { ActorPool } from '../../../runtime/actor-pool.js';
import type { JobPlaces } from '../../../runtime/job-places.js';
import type { Store } from '../../db/store.js';

export interface Services {
  config: Config;
  pool: ActorPool;
  store: Store;
  places: JobPlaces;
}
