/**
 * The request-body limit of a route. A body that says its size
 * (`Content-Length`, no `Transfer-Encoding`) is judged by that header alone,
 * as Hono's bodyLimit does, but without touching the body: asking Hono for it
 * makes the Node adapter build a web Request and stream around the socket,
 * and every later read go through them, where otherwise the handler reads the
 * bytes straight from the socket. A body of unknown size is counted as it
 * arrives (Hono's bodyLimit), and cut off past the limit, unless `count` is false: the handler
 * streams the body and counts it itself.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

export function limitBody(
  maxSize: number,
  onTooLarge: (context: Context) => never,
  { count = true }: { count?: boolean } = {},
): MiddlewareHandler {
  const counting = bodyLimit({ maxSize, onError: onTooLarge });
  return async (context, next) => {
    const length = context.req.header('content-length');
    if (length !== undefined && context.req.header('transfer-encoding') === undefined) {
      // Node's HTTP parser accepts only a well-formed length, and reads no more than it says.
      if (Number.parseInt(length, 10) > maxSize) onTooLarge(context);
      return next();
    }
    // A body the handler streams is counted there: Hono's counter would take it all in first.
    return count ? counting(context, next) : next();
  };
}
