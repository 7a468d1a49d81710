// Package fence makes a store refuse the writes of a holder that has lost
// its lock. Every hold carries a fencing token that grows with each
// acquisition; a writer sends it with each write, and a guard refuses a
// token below the highest its resource has accepted (ErrStale), so a
// holder that stalled past its lease (a GC pause, a stopped VM) cannot
// overwrite its successor's work.
// An equal token passes: the same holder writing again.
//
// Guards: SQL checks the token in the caller's database/sql transaction
// with one statement (PostgreSQL, SQLite); Redis makes a fenced SET, HSET,
// DEL, EXPIRE or user Lua in one script, the highest token kept beside the
// key; Middleware guards HTTP requests (Header), backed by either (Guard).
//
// Tokens compare only within one counter: one lock name, whichever
// primitive drew them (lock.FencingToken of a Mutex or fair Mutex,
// rwlock.FencingToken of write holds), or one election (election.Epoch);
// fence one resource with one lock name. Redlock tokens, drawn from
// independent masters, do not compare, and semaphore permits carry none.
// Reads and effects outside the guarded store are not fenced
// (docs/fencing.md).
//
// The package uses the public API only and brings no database driver.
package fence
