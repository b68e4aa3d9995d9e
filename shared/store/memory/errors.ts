/**
 * What the memory adapters throw where the storage service answers with an error status: it carries
 * `statusCode` (and `code`) like the SDK's RestError, so code that looks at the status treats both alike.
 */
export class MemoryStorageError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'MemoryStorageError';
  }
}

let etagSequence = 0;
/** A new opaque ETag, different from every other one this process handed out. */
export const nextEtag = (): string => `W/"mem-${(++etagSequence).toString(36)}"`;

// The Table service's rules for keys and properties (Azurite enforces the same ones).
// eslint-disable-next-line no-control-regex -- the service's own rule: control characters are refused in keys
const FORBIDDEN_KEY = /[/\\#?\u0000-\u001f\u007f-\u009f]/;
const MAX_KEY = 1024;
/** A string property holds at most 64 KiB: 32 Ki UTF-16 units. */
export const MAX_STRING_PROPERTY = 32_768;

/** Throws the service's 400 for a partition or row key it would refuse. */
export function checkKey(key: string, what: 'PartitionKey' | 'RowKey'): void {
  if (key.length > MAX_KEY || FORBIDDEN_KEY.test(key))
    throw new MemoryStorageError(400, 'InvalidInput', `${what} ${JSON.stringify(key)} is not valid in a table`);
}

/** Throws the service's 400 for a string property over 64 KiB. */
export function checkProperties(entity: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(entity)) {
    if (typeof value === 'string' && value.length > MAX_STRING_PROPERTY) {
      throw new MemoryStorageError(400, 'PropertyValueTooLarge', `property ${name} exceeds the maximum allowed size (64KB)`);
    }
  }
}
