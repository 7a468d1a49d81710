// Package fence makes a store refuse the writes of a holder that has lost
// its lock. Every hold carries a fencing token that grows with each
// acquisition of the lock; a writer sends its token with each write, and
// a guard in front of the store refuses a token below the highest one the
// resource has accepted (ErrStale), so a holder that stalled past its
// lease (a GC pause, a stopped VM) cannot overwrite its successor's work.
// A token equal to the highest passes: the same holder writing again.
//
// Three guards: SQL checks the token in the caller's own database/sql
// transaction, with one statement on a table of its own (PostgreSQL,
// SQLite); Redis makes a fenced SET, HSET, DEL, EXPIRE or a user's Lua in
// one script, the highest token kept beside the key; Middleware refuses
// an HTTP request whose token (Header) is below its resource's highest,
// backed by either (Guard).
//
// Tokens compare only within one counter. Comparable: the tokens of one
// lock name, whichever primitive drew them (lock.FencingToken of a Mutex
// or fair Mutex, rwlock.FencingToken of an RWMutex's write holds: one
// name serves one kind), and the epochs of one election (election.Epoch).
// Not comparable: the tokens of two names, so fence one resource with one
// lock name; and a Redlock's, whose members draw from independent masters'
// counters (redlock's package documentation). A semaphore's permits carry
// no token: several holders at once cannot be fenced. docs/fencing.md says
// what fencing guarantees and what it does not: reads, and effects outside
// the guarded store, are not fenced.
//
// The package uses the public API only and no database driver: the
// caller's program brings its own.
package fence
