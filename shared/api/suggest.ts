/**
 * Edit distance (Levenshtein) between two short strings: field names, not documents. Past `limit` the
 * exact value does not matter: once every entry of a row exceeds it, `limit + 1` is returned at once.
 */
export function editDistance(a: string, b: string, limit = Infinity): number {
  const previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = previous[0];
    previous[0] = i;
    let rowMinimum = previous[0];
    for (let j = 1; j <= b.length; j++) {
      const above = previous[j];
      previous[j] = Math.min(previous[j] + 1, previous[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
      if (previous[j] < rowMinimum) rowMinimum = previous[j];
    }
    if (rowMinimum > limit) return limit + 1;
  }
  return previous[b.length];
}

/**
 * The known name closest to `unknown`, when one is near enough to be a likely typo. Names whose length
 * alone puts them out of reach are skipped, so a flood of long unknown keys costs little.
 */
export function closestName(unknown: string, known: readonly string[]): string | undefined {
  const lower = unknown.toLowerCase();
  const allowed = Math.max(2, Math.floor(unknown.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    // The distance is at least the difference in length: too far for a suggestion, or no better than the best so far.
    const atLeast = Math.abs(name.length - lower.length);
    if (atLeast > allowed || (best && atLeast >= best.distance)) continue;
    const candidate = name.toLowerCase();
    const distance = candidate === lower ? 0 : editDistance(lower, candidate, best ? Math.min(allowed, best.distance - 1) : allowed);
    if (!best || distance < best.distance) best = { name, distance };
  }
  if (!best) return undefined;
  return best.distance <= allowed ? best.name : undefined;
}
