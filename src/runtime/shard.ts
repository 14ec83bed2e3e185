// The shard map: (organization, queue) → shard → (node, thread). FNV-1a over the actor key picks the shard, so
// every thread and every node computes the same one without coordination; the shard table in the store says
// which node owns a shard (Membership), and the shard's number picks the thread on that node. An
// organization's quota actor (queue key ORG_ACTOR) has a shard like any queue.

export const actorKey = (organizationId: string, queueName: string): string => `${organizationId}/${queueName}`;

export function shardOf(key: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % shards;
}

/** The actor thread of a shard on the node that owns it: every actor of a shard lives on one thread. */
export const threadOf = (shard: number, threads: number): number => shard % threads;
