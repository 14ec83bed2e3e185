// Lays out a workflow's dependency graph left to right for an SVG: no DOM, no library.
//
// 1. Layers: a job's column is the length of the longest dependency chain above it, so every edge points
//    right and a job sits one column after its latest parent.
// 2. Order within a column: a few sweeps of the barycenter heuristic (each node moves to the mean position of
//    its neighbours in the column before, then after), which removes most crossings of small graphs.
// 3. Coordinates: fixed-size boxes; each column is centred vertically; edges are cubic curves from a
//    parent's right side to the child's left side.
// Dependencies on names not in the graph are ignored, and so is an edge that would close a cycle (the server
// refuses cyclic workflows; the page must not hang on one all the same).

export interface DagNodeInput {
  id: string;
  deps: string[];
}

export interface Box {
  w: number;
  h: number;
  gapX: number;
  gapY: number;
  pad: number;
}

export interface PlacedNode {
  id: string;
  layer: number;
  order: number;
  x: number;
  y: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  /** SVG path data. */
  d: string;
}

export interface DagLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export const DEFAULT_BOX: Box = { w: 168, h: 48, gapX: 64, gapY: 18, pad: 12 };
const SWEEPS = 4;

export function layoutDag(input: DagNodeInput[], box: Box = DEFAULT_BOX): DagLayout {
  const ids = new Set(input.map((n) => n.id));
  const parents = new Map<string, string[]>();
  for (const n of input) parents.set(n.id, [...new Set(n.deps)].filter((d) => ids.has(d) && d !== n.id));

  // 1. Longest-path layers, depth-first with a visiting mark that drops back edges.
  const layer = new Map<string, number>();
  const visiting = new Set<string>();
  const depth = (id: string): number => {
    const known = layer.get(id);
    if (known !== undefined) return known;
    visiting.add(id);
    let d = 0;
    const kept: string[] = [];
    for (const p of parents.get(id) ?? []) {
      if (visiting.has(p)) continue;
      kept.push(p);
      d = Math.max(d, depth(p) + 1);
    }
    parents.set(id, kept);
    visiting.delete(id);
    layer.set(id, d);
    return d;
  };
  for (const n of input) depth(n.id);

  const children = new Map<string, string[]>(input.map((n) => [n.id, []]));
  for (const [id, ps] of parents) for (const p of ps) children.get(p)!.push(id);

  const columns: string[][] = [];
  for (const n of input) (columns[layer.get(n.id)!] ??= []).push(n.id);

  // 2. Barycenter sweeps, down then up; ties keep the current order (a stable sort).
  const position = new Map<string, number>();
  const index = () => columns.forEach((col) => col.forEach((id, i) => position.set(id, i)));
  index();
  const reorder = (col: string[], neighbours: (id: string) => string[]) => {
    const key = new Map(
      col.map((id) => {
        const ns = neighbours(id);
        return [id, ns.length ? ns.reduce((s, n) => s + position.get(n)!, 0) / ns.length : position.get(id)!] as const;
      }),
    );
    col.sort((a, b) => key.get(a)! - key.get(b)!);
    col.forEach((id, i) => position.set(id, i));
  };
  for (let s = 0; s < SWEEPS; s++) {
    for (let l = 1; l < columns.length; l++) reorder(columns[l]!, (id) => parents.get(id)!);
    for (let l = columns.length - 2; l >= 0; l--) reorder(columns[l]!, (id) => children.get(id)!);
  }

  // 3. Coordinates.
  const tallest = Math.max(0, ...columns.map((c) => c.length));
  const height = box.pad * 2 + tallest * box.h + Math.max(0, tallest - 1) * box.gapY;
  const width = box.pad * 2 + columns.length * box.w + Math.max(0, columns.length - 1) * box.gapX;
  const placed = new Map<string, PlacedNode>();
  columns.forEach((col, l) => {
    const colHeight = col.length * box.h + (col.length - 1) * box.gapY;
    const top = (height - colHeight) / 2;
    col.forEach((id, i) => placed.set(id, { id, layer: l, order: i, x: box.pad + l * (box.w + box.gapX), y: top + i * (box.h + box.gapY) }));
  });
  const edges: PlacedEdge[] = [];
  for (const n of input) {
    const to = placed.get(n.id)!;
    for (const p of parents.get(n.id)!) {
      const from = placed.get(p)!;
      const x1 = from.x + box.w;
      const y1 = from.y + box.h / 2;
      const x2 = to.x;
      const y2 = to.y + box.h / 2;
      const bend = Math.max(box.gapX / 2, (x2 - x1) / 3);
      edges.push({ from: p, to: n.id, d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}` });
    }
  }
  return { nodes: input.map((n) => placed.get(n.id)!), edges, width, height };
}
