import type Database from 'better-sqlite3'

interface BatchedWrite {
  run: () => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/**
 * Writes wait for the end of the event loop's turn and commit together, one
 * transaction for every write issued meanwhile: one write-ahead log append (and,
 * with FULL, one fsync) per batch instead of per write; a page many writes touch
 * (a statistics counter) is written once. Each write stays atomic on its own (a
 * savepoint: one that fails is rolled back alone), and is answered only once the
 * batch has committed. Reads run at once.
 *
 * `afterCommit` hears how many writes each committed batch held.
 */
export function writeBatches(db: Database.Database, afterCommit: (count: number) => void) {
  let batch: BatchedWrite[] = []
  let closed = false
  // A write that throws midway must leave nothing behind. Savepoints cost a few µs a write, so a batch
  // first runs without them; if any write throws, the batch is rolled back and run again, each write
  // in a savepoint of its own (a write depends only on the file and its arguments: run again, it does the same).
  const aWriteFailed = Symbol('a write failed')
  const savepoint = db.transaction((run: () => unknown) => run())
  const commitBatch = db.transaction((ops: typeof batch, guarded: boolean) => {
    const results: { ok: boolean; value: unknown }[] = []
    for (const op of ops) {
      try {
        results.push({ ok: true, value: guarded ? savepoint(op.run) : op.run() })
      } catch (error) {
        if (!guarded) throw aWriteFailed
        results.push({ ok: false, value: error })
      }
      // An I/O error can make SQLite roll the whole transaction back: then nothing of the batch may be answered as written.
      if (!db.inTransaction) throw new Error('the SQLite batch transaction was rolled back')
    }
    return results
  })
  function flush(): void {
    const ops = batch
    batch = []
    let results: { ok: boolean; value: unknown }[]
    try {
      try {
        results = commitBatch.immediate(ops, false)
      } catch (error) {
        if (error !== aWriteFailed) throw error
        results = commitBatch.immediate(ops, true)
      }
    } catch (error) {
      // The commit itself failed (the file is locked past the busy timeout, the disk is full): nothing was written.
      for (const op of ops) op.reject(error)
      return
    }
    for (const [i, op] of ops.entries()) {
      const result = results[i]!
      if (result.ok) op.resolve(result.value)
      else op.reject(result.value)
    }
    afterCommit(ops.length)
  }
  function write<T>(run: () => T): Promise<T> {
    if (closed) return Promise.reject(new Error('the SQLite store is closed'))
    return new Promise<T>((resolve, reject) => {
      if (batch.length === 0) setImmediate(flush)
      batch.push({ run, resolve: resolve as (value: unknown) => void, reject })
    })
  }
  return {
    write,
    /** Commits the writes already issued, and refuses writes from now on. */
    close(): void {
      if (batch.length > 0) flush()
      closed = true
    },
  }
}
