// The actors' binary heap against a plain list: any mix of pushes and pops, with ties, surfaces the items in order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Heap } from '../src/actors/heap.js';

test('a heap pops in its order through any mix of pushes and pops (seeded, 200 runs, keys with ties)', () => {
  const rng = (seed: number) => () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  for (let seed = 1; seed <= 200; seed++) {
    const random = rng(seed);
    const heap = new Heap<{ key: number; n: number }>((a, b) => a.key < b.key);
    const model: Array<{ key: number; n: number }> = [];
    const least = () => model.reduce<number | undefined>((m, x) => (m === undefined || x.key < m ? x.key : m), undefined);
    const range = 1 + Math.floor(random() * 50);
    for (let step = 0; step < 400; step++) {
      if (random() < 0.6) {
        const item = { key: Math.floor(random() * range), n: step };
        heap.push(item);
        model.push(item);
      } else {
        const got = heap.pop();
        assert.equal(got?.key, least(), `seed ${seed}, step ${step}`);
        if (got) model.splice(model.indexOf(got), 1);
      }
      assert.equal(heap.size, model.length, `seed ${seed}, step ${step}`);
      assert.equal(heap.peek()?.key, least(), `seed ${seed}, step ${step}`);
    }
  }
});
