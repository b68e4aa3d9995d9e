/** In-memory adapters of the storage and queue ports (`../ports`), for fast controller tests. */
export { MemoryDocumentStore } from './documentStore';
export type { DocumentMethod } from './documentStore';
export { MemoryEventLog } from './eventLog';
export { MemoryLeaseStore } from './leaseStore';
export { MemoryLedger } from './ledger';
export type { LedgerMethod } from './ledger';
export { MemoryMessageQueue } from './messageQueue';
export type { SentMessage } from './messageQueue';
export { Faults } from './faults';
export type { BeforeWrite, FaultOptions, FaultWhen } from './faults';
export { MemoryStorageError } from './errors';
export { MemoryTable } from './table';
