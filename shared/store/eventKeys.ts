import { bucketOf } from './buckets';

/**
 * Keys of the event table, one rule for the Table adapter and the in-memory log. An object's events live in
 * one of EVENT_BUCKETS partitions of its kind (`<kind>_~<bucket>`, by a hash of its name), under row keys
 * that start with its name, so a request's events about hundreds of objects (a bulk apply, a batch of
 * evictions) are a few transactions, not one request per object, and "the events of one object" is still one
 * row-key range of one partition. Versions before this wrote each object's events in a partition of its own
 * (`<kind>_<name>`): those are still read (`legacyEventPartition`). Both forms start with `<kind>_`, so
 * "the events of one kind" stays one partition-key range.
 */
export const EVENT_BUCKETS = 16;

/** A name as a key may hold it ("/" is not allowed in keys: namespaced names "ns/name" become "ns:name"). */
const keyName = (name: string) => name.replaceAll('/', ':');

export const eventPartition = (kind: string, name: string): string => `${kind}_~${bucketOf(keyName(name), EVENT_BUCKETS)}`;
export const legacyEventPartition = (kind: string, name: string): string => `${kind}_${keyName(name)}`;
/** Every partition of one kind (both forms). */
export const kindPartitions = (kind: string): { ge: string; lt: string } => ({ ge: `${kind}_`, lt: `${kind}\`` });

/** An event's row key: the object's name, then `suffix` (which starts with the event's time, so one object's rows sort by time). */
export const eventRowKey = (name: string, suffix: string): string => `${keyName(name)}|${suffix}`;
/** The row keys of one object's events in its partition ('|' ends a name: no name holds it; '~' sorts after every suffix character). */
export const objectRows = (name: string): { ge: string; lt: string } => ({ ge: `${keyName(name)}|`, lt: `${keyName(name)}|~` });
