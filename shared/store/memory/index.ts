/** In-memory adapters of the storage and queue ports (`../ports`), for fast controller tests. */
export type { DocumentMethod } from './documentStore';
export { MemoryDocumentStore } from './documentStore';
export { MemoryStorageError } from './errors';
export { MemoryEventLog } from './eventLog';
export type { BeforeWrite, FaultOptions, FaultWhen } from './faults';
export { Faults } from './faults';
export { MemoryLeaseStore } from './leaseStore';
export type { LedgerMethod } from './ledger';
export { MemoryLedger } from './ledger';
export type { SentMessage } from './messageQueue';
export { MemoryMessageQueue } from './messageQueue';
export { MemoryTable } from './table';
