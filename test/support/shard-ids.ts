import { shardForId } from '../../shared/table-layout.js';

/** Ids that all land in one shard, for tests of the order inside a shard. */
export function idsInShard(shard: number, prefix = 's'): () => string {
  let n = 0;
  return () => {
    for (;;) {
      const id = `${prefix}-${String(++n).padStart(6, '0')}`;
      if (shardForId(id) === shard) return id;
    }
  };
}
