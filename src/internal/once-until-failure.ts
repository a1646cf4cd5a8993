/**
 * Runs `work` once and shares its promise with every caller; a failure is not
 * kept, so the next call tries again (the user may have fixed the cause).
 */
export function onceUntilFailure<T>(work: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    if (!pending) {
      const attempt = work();
      pending = attempt;
      attempt.catch(() => {
        if (pending === attempt) pending = undefined;
      });
    }
    return pending;
  };
}
