/**
 * Keeps a scroller at its end while the user is there, as chat apps do: new
 * output, and anything that grows later (a chart's image arriving after its
 * turn ended), stays in view. Scrolling up to read stops it; coming back to
 * the end, or `jumpToEnd`, resumes it. Used by the transcript (chat and
 * notebook) and by a running cell's printed output.
 */
import type { RefObject } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

/** Within this of the end counts as at the end: a user need not land on the last pixel. */
const NEAR_END_PX = 48;

export interface FollowOutputOptions {
  /** Whether to follow now (a printed output follows only while its code runs). @default true */
  active?: boolean;
  /** When it changes (another conversation, a new turn), following starts again, from the end. */
  restartKey?: unknown;
}

export interface FollowOutput {
  /** False once the user scrolled up, away from the end: offer `jumpToEnd`. */
  following: boolean;
  /** Scrolls to the end and follows again. */
  jumpToEnd(): void;
}

export function useFollowOutput(
  scroller: RefObject<HTMLElement | null>,
  { active = true, restartKey }: FollowOutputOptions = {},
): FollowOutput {
  const [following, setFollowing] = useState(true);
  const state = useRef({ following: true, active, lastTop: 0 });
  // The render that ends it may bring the last output too: it is followed as well.
  const ending = state.current.active && !active;
  state.current.active = active;

  const follow = (value: boolean) => {
    state.current.following = value;
    setFollowing(value);
  };
  const toEnd = () => {
    const element = scroller.current;
    if (!element) return;
    element.scrollTop = element.scrollHeight;
    state.current.lastTop = element.scrollTop;
  };

  // After each render (new output arrived) while following.
  useLayoutEffect(() => {
    if ((state.current.active || ending) && state.current.following) toEnd();
  });

  // Another conversation opens at its latest message; a new turn is shown as it starts.
  useLayoutEffect(() => {
    if (!state.current.active) return;
    follow(true);
    toEnd();
  }, [restartKey]);

  useEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const onScroll = () => {
      const top = element.scrollTop;
      // Growth below never moves scrollTop, so only the user (or a shrink, which lands at the end) scrolls it up.
      if (element.scrollHeight - top - element.clientHeight <= NEAR_END_PX) {
        if (!state.current.following) follow(true);
      } else if (top < state.current.lastTop && state.current.following) follow(false);
      state.current.lastTop = top;
    };
    // A wheel or finger moving up stops following at once, before output streaming in can pull the view back down;
    // not when it scrolls a box inside (a long printed output) that can still go up.
    const movesThisUp = (target: EventTarget | null) => {
      for (let node = target as HTMLElement | null; node && node !== element; node = node.parentElement) {
        if (node.scrollTop > 0) return false;
      }
      return element.scrollTop > 0;
    };
    const onWheel = (event: WheelEvent) => {
      if (event.deltaY < 0 && state.current.following && movesThisUp(event.target)) follow(false);
    };
    let touchY: number | undefined;
    const onTouchStart = (event: TouchEvent) => {
      touchY = event.touches[0]?.clientY;
    };
    const onTouchMove = (event: TouchEvent) => {
      const y = event.touches[0]?.clientY;
      if (y === undefined || touchY === undefined || y <= touchY) return;
      if (state.current.following && movesThisUp(event.target)) follow(false);
    };
    // Content that grows without a render of ours (an image decoding, a fold opening) and a scroller that shrinks.
    const resized = new ResizeObserver(() => {
      if (state.current.active && state.current.following) toEnd();
    });
    resized.observe(element);
    for (const child of Array.from(element.children)) resized.observe(child);
    const listeners = [
      ['scroll', onScroll],
      ['wheel', onWheel],
      ['touchstart', onTouchStart],
      ['touchmove', onTouchMove],
    ] as const;
    for (const [name, listener] of listeners)
      element.addEventListener(name, listener as EventListener, { passive: true });
    return () => {
      for (const [name, listener] of listeners) element.removeEventListener(name, listener as EventListener);
      resized.disconnect();
    };
  }, []);

  return {
    following,
    jumpToEnd: () => {
      follow(true);
      toEnd();
    },
  };
}
