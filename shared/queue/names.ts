/** Queue names this app uses. The poison queues are `<name>-poison`. */
export const QUEUES = {
  taintEvaluations: 'taint-evaluations',
  /** Clusters whose faulty taints changed: plan or abandon their evictions. */
  taintManager: 'taint-manager',
  /** Paced evictions, visible at their send slot. */
  evictions: 'evictions',
  /** Bindings to place (new, or a cluster lost to eviction). */
  scheduler: 'scheduler',
  /** Application failover deadline checks, visible shortly before their deadline. */
  applicationFailover: 'application-failover',
  /** The next chunk of a large apply going on in the background. */
  applyChunks: 'apply-chunks',
} as const;
