// An unordered collection of what is open now (tunnel sockets, revocable tunnels), each item
// removed once, through the entry its addition returned.

/** One item's place in an {@link OpenList}; give it back to {@link OpenList.delete} once. */
export interface OpenListEntry<T> {
  /** The item, or undefined once deleted. */
  value: T | undefined
  prev: OpenListEntry<T> | null
  next: OpenListEntry<T> | null
}

/**
 * A doubly linked list of the items open now, for collections that every CONNECT adds to and
 * removes from. With the tunnel registry's two Sets in their place, every tunnel's
 * objects survived young-generation collections: 7.4 to 8.5 KB per CONNECT, against 1.5 to 1.6
 * KB with this list, as for a bare Node relay (`--trace-gc-nvp`, bench/NOTES.md, thirteenth
 * session). A server that only adds its sockets to a Set and deletes them on close shows it too,
 * on Node 20 and 24 (not 22); what in the Set keeps the entries alive was not established. A
 * deleted entry here points at nothing.
 */
export class OpenList<T> {
  #head: OpenListEntry<T> | null = null

  /** Adds `value`; returns the entry that deletes it. */
  add (value: T): OpenListEntry<T> {
    const entry: OpenListEntry<T> = { value, prev: null, next: this.#head }
    if (this.#head !== null) this.#head.prev = entry
    this.#head = entry
    return entry
  }

  /** Removes the entry's item; does nothing the second time. */
  delete (entry: OpenListEntry<T>): void {
    if (entry.value === undefined) return
    if (entry.prev === null) this.#head = entry.next
    else entry.prev.next = entry.next
    if (entry.next !== null) entry.next.prev = entry.prev
    entry.value = undefined
    entry.prev = null
    entry.next = null
  }

  /** The items open now, newest first, as an array of their own (deleting while walking it is safe). */
  toArray (): T[] {
    const items: T[] = []
    for (let entry = this.#head; entry !== null; entry = entry.next) {
      if (entry.value !== undefined) items.push(entry.value)
    }
    return items
  }
}
