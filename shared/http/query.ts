import type { HttpRequest } from '@azure/functions';
import type { z } from 'zod';
import { badRequest, toFieldErrors } from '../api/errors';

/** The request's query parameters, valid by `schema`; otherwise 400 naming each bad one (`query.<name>`) and why. */
export function parseQuery<T extends z.ZodType>(req: Pick<HttpRequest, 'query'>, schema: T): z.output<T> {
  // Without reportInput zod drops each issue's input, and a value that is present but malformed
  // (`limit=abc`) would be described as a missing field.
  const parsed = schema.safeParse(Object.fromEntries(req.query.entries()), { reportInput: true });
  if (!parsed.success) throw badRequest(toFieldErrors(parsed.error, ['query']));
  return parsed.data;
}
