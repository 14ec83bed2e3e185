// The shard map: (organization, queue) → actor thread. FNV-1a over the actor key, so every thread and every
// node computes the same owner without coordination.

export const actorKey = (organizationId: string, queueName: string): string => `${organizationId}/${queueName}`;

export function shardOf(key: string, threads: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % threads;
}
