/**
 * Hash buckets for spreading one kind's rows over several partitions. FNV-1a of the key, modulo `count`,
 * as two hex digits (so buckets sort in hash order). One rule for the ledger's cluster shards and the
 * document stores' buckets.
 */
export function bucketOf(key: string, count: number): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return (hash % count).toString(16).padStart(2, '0');
}
