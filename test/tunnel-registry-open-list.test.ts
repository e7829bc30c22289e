import { test } from 'tap'
import { OpenList } from './helpers/internals'

// The tunnel registry keeps the open tunnels' sockets and revocable tunnels in this list. A
// deleted entry must point at nothing: not its item, not its neighbours, so that nothing of a
// closed tunnel is kept through the entry by an entry still in the list.

test('tunnel registry, open list: a deleted entry keeps no reference to its item or its neighbours, and deleting it again changes nothing', async (t) => {
  const list = new OpenList<object>()
  const first = { name: 'first' }
  const middle = { name: 'middle' }
  const last = { name: 'last' }
  const entries = [first, middle, last].map((item) => list.add(item))
  t.strictSame(list.toArray(), [last, middle, first], 'items newest first')

  const [firstEntry, middleEntry, lastEntry] = entries
  if (firstEntry === undefined || middleEntry === undefined || lastEntry === undefined) throw new Error('three entries expected')
  list.delete(middleEntry)
  t.equal(middleEntry.value, undefined, 'the deleted entry no longer holds its item')
  t.equal(middleEntry.prev, null, 'nor the entry before it')
  t.equal(middleEntry.next, null, 'nor the entry after it')
  t.strictSame(list.toArray(), [last, first], 'its neighbours are linked to each other')

  list.delete(middleEntry)
  t.strictSame(list.toArray(), [last, first], 'deleting it again changes nothing')

  list.delete(lastEntry)
  list.delete(firstEntry)
  t.strictSame(list.toArray(), [], 'empty once every entry is deleted')
  t.equal(firstEntry.value, undefined)
  t.equal(lastEntry.next, null)
  list.add(middle)
  t.strictSame(list.toArray(), [middle], 'usable again after emptying')
})

test('tunnel registry, open list: items deleted while walking the array toArray returned are all visited once', async (t) => {
  const list = new OpenList<number>()
  const entries = [1, 2, 3, 4].map((item) => list.add(item))
  const seen: number[] = []
  for (const item of list.toArray()) {
    seen.push(item)
    // As destroyAll does: destroying a tunnel's stream may delete entries while the walk goes on.
    for (const entry of entries) list.delete(entry)
  }
  t.strictSame(seen, [4, 3, 2, 1])
  t.strictSame(list.toArray(), [])
})
