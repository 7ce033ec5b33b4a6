import { useEffect } from 'react';
import { getViewportForBounds, useReactFlow, useStore, useStoreApi } from '@xyflow/react';

/**
 * Placed inside a <ReactFlow>: fits the graph into view again when the pane changes size (a phone
 * turned, a window resized) and when the number of nodes changes (a node added in the editor lands
 * in view), once every node has been measured. It reads the measured nodes and sets the viewport
 * itself: React Flow's fitView() and useNodesInitialized() wait for the measurements to reach the
 * page's own node objects, which a read-only graph (no onNodesChange) never takes in.
 */
export function AutoFit({ count, maxZoom = 1.2 }: { count: number; maxZoom?: number }) {
  const { setViewport } = useReactFlow();
  const store = useStoreApi();
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  const measured = useStore(
    (s) => s.nodeLookup.size > 0 && [...s.nodeLookup.values()].every((n) => !!n.measured.width && !!n.measured.height),
  );
  useEffect(() => {
    if (!measured || width <= 0 || height <= 0) return;
    const { nodeLookup, minZoom } = store.getState();
    let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
    for (const n of nodeLookup.values()) {
      const { x, y } = n.internals.positionAbsolute;
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      x1 = Math.max(x1, x + (n.measured.width ?? 0));
      y1 = Math.max(y1, y + (n.measured.height ?? 0));
    }
    const bounds = { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
    void setViewport(getViewportForBounds(bounds, width, height, minZoom, maxZoom, 0.2));
  }, [store, setViewport, measured, width, height, count, maxZoom]);
  return null;
}
