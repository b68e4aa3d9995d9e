/**
 * Queue messages are base64-encoded JSON: the Functions host's default `messageEncoding`. Raw JSON sent by
 * the SDK would land straight in `<queue>-poison`, so every sender goes through `encodeMessage`.
 */
export function encodeMessage(message: unknown): string {
  return Buffer.from(JSON.stringify(message), 'utf8').toString('base64');
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The host's view of a message: base64 text decoded; JSON becomes an object, anything else stays a string. */
export function decodeMessage(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  const compact = text.trim();
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) return { ok: false, reason: 'message is not valid base64' };
  const decoded = Buffer.from(compact, 'base64').toString('utf8');
  try {
    return { ok: true, value: JSON.parse(decoded) };
  } catch {
    return { ok: true, value: decoded };
  }
}
