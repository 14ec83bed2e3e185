// What the use cases are given: the node's configuration and clock, the actors (every write to jobs and queues
// goes through them), the store (reads, and the writes of resources no actor owns), job routing, quota
// admission, the event bus, the channel that tells every node of a change to what it caches, the sending of
// outgoing webhooks, the node's JWT signer, outgoing mail, and the node's id.
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { InvalidationChannel } from '../io/db/invalidations.js';
import type { Store } from '../io/db/store.js';
import type { Mailer } from '../io/mail/mailer.js';
import type { Deliverer } from '../io/webhooks/deliverer.js';
import type { Log } from '../log.js';
import type { ActorPool } from '../runtime/actor-pool.js';
import type { JobPlaces } from '../runtime/job-places.js';
import type { EventBus } from './events.js';
import type { Quotas } from './quotas.js';
import type { Tokens } from './tokens.js';

export interface AppContext {
  config: Config;
  /** The node's clock: windows and ages computed by reads agree with the actors' time. */
  clock: Clock;
  log: Log;
  actors: ActorPool;
  store: Store;
  places: JobPlaces;
  quotas: Quotas;
  /** Public events of every organization, after commit: streams and outgoing webhooks listen here. */
  events: EventBus;
  /** Tells every node of a committed change to what they cache (keys, tokens, plans, webhook endpoints). */
  invalidations: InvalidationChannel;
  /** Sends outgoing webhooks (signing, the SSRF guard, attempts and waits); what to send is src/app/deliveries.ts. */
  deliverer: Deliverer;
  /** Signs and verifies the node's JWTs (one secret for every node of a cluster). */
  tokens: Tokens;
  mailer: Mailer;
  /** This node's id in the cluster: rows it claims (the deliveries it sends) carry it. */
  nodeId: string;
}
