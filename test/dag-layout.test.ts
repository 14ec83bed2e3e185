// The workflow graph layout of the dashboard (ui/src/dag.ts): edges point right, boxes never overlap,
// crossings of a simple graph are removed, and a cycle or an unknown dependency does not hang or throw.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_BOX, layoutDag, type DagLayout, type DagNodeInput } from '../ui/src/dag.js';

const at = (l: DagLayout, id: string) => l.nodes.find((n) => n.id === id)!;

function assertSane(input: DagNodeInput[], l: DagLayout): void {
  assert.equal(l.nodes.length, input.length);
  for (const a of l.nodes) {
    assert.ok(a.x >= 0 && a.y >= 0 && a.x + DEFAULT_BOX.w <= l.width && a.y + DEFAULT_BOX.h <= l.height, `${a.id} inside the drawing`);
    for (const b of l.nodes) {
      if (a === b) continue;
      const apart = a.x + DEFAULT_BOX.w <= b.x || b.x + DEFAULT_BOX.w <= a.x || a.y + DEFAULT_BOX.h <= b.y || b.y + DEFAULT_BOX.h <= a.y;
      assert.ok(apart, `${a.id} and ${b.id} overlap`);
    }
  }
  for (const e of l.edges) assert.ok(at(l, e.from).layer < at(l, e.to).layer, `${e.from} → ${e.to} points right`);
}

test('a diamond: one column per depth, the join after both branches', () => {
  const input = [
    { id: 'fetch', deps: [] },
    { id: 'resize', deps: ['fetch'] },
    { id: 'scan', deps: ['fetch'] },
    { id: 'publish', deps: ['resize', 'scan'] },
  ];
  const l = layoutDag(input);
  assertSane(input, l);
  assert.deepEqual(input.map((n) => at(l, n.id).layer), [0, 1, 1, 2]);
  assert.equal(l.edges.length, 4);
  // The join sits level with the middle of its two parents.
  assert.equal(at(l, 'publish').y, (at(l, 'resize').y + at(l, 'scan').y) / 2);
});

test('a job goes one column after its latest parent (longest path), not its first', () => {
  const input = [
    { id: 'a', deps: [] },
    { id: 'b', deps: ['a'] },
    { id: 'c', deps: ['b'] },
    { id: 'd', deps: ['a', 'c'] },
  ];
  const l = layoutDag(input);
  assertSane(input, l);
  assert.equal(at(l, 'd').layer, 3);
});

test('crossings of two independent chains listed crosswise are removed', () => {
  const input = [
    { id: 'a1', deps: [] },
    { id: 'b1', deps: [] },
    { id: 'b2', deps: ['b1'] },
    { id: 'a2', deps: ['a1'] },
  ];
  const l = layoutDag(input);
  assertSane(input, l);
  assert.equal(at(l, 'a1').order, at(l, 'a2').order);
  assert.equal(at(l, 'b1').order, at(l, 'b2').order);
});

test('unknown dependencies, self-dependencies and cycles are drawn without hanging', () => {
  const input = [
    { id: 'x', deps: ['ghost', 'x', 'z'] },
    { id: 'y', deps: ['x'] },
    { id: 'z', deps: ['y'] },
  ];
  const l = layoutDag(input);
  assertSane(input, l);
  assert.equal(l.edges.length, 2, 'the edge closing the cycle is dropped');
  const empty = layoutDag([]);
  assert.deepEqual([empty.nodes.length, empty.edges.length], [0, 0]);
});
