import { useEffect, useState } from 'react';

/**
 * The rendered width of an element, kept current by a ResizeObserver (0 until it is laid out).
 * Returns a callback ref, so an element that appears later (after a load) is observed too.
 */
export function useWidth<T extends HTMLElement>() {
  const [el, setEl] = useState<T | null>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    if (!el) return;
    const ro = new ResizeObserver(([e]) => setWidth(Math.round(e.contentRect.width)));
    ro.observe(el);
    return () => ro.disconnect();
  }, [el]);
  return [setEl, width] as const;
}
