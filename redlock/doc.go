// Package redlock holds one lock across several members: New is the
// Redlock algorithm over independent Redis masters (held when a quorum,
// len/2+1, is held), NewMulti the all-of multi-lock (several resources,
// together or none). A member is a *lock.Mutex, or the ReadLocker or
// WriteLocker side of an *rwlock.RWMutex; one owner holds them all.
//
// An acquire tries every member at once, each bounded by a node timeout
// (DefaultNodeTimeout, 250 ms, or lease/10 when shorter). Once the quorum
// is won or out of reach, the other members get a grace as long again as
// that took (plus 10 ms) to answer and join the hold; an attempt that
// succeeds later is given back at once. A hold is valid when the quorum
// was won within the validity time, lease - elapsed - drift (drift =
// lease/100 + 2 ms). A failed round is given back in the background and
// retried after a random delay; the first round is made whatever
// WithWaitTimeout says.
//
// Each round of a fresh acquisition has its own owner id, so a late
// give-back never undoes a later hold. A context already carrying an owner
// (a hold of this Lock, or of a member RWMutex's other side) re-enters as
// that owner, and its rounds give back only the members they counted on.
// The watchdog renews every member won and needs the quorum: losing it
// ends the hold's context with ErrLockLost and gives back what survives.
// Unlock releases in parallel and returns once a quorum (NewMulti: all)
// released or cannot; the rest finish in the background, bounded by the
// unlock timeout, and Drain waits for them.
//
// A member's lease (lease time or watchdog timeout), unlock timeout and
// watchdog become the Redlock's when New was given none. Members that
// disagree with each other or with New's options are refused with
// ErrInvalidArgument naming the member, writing nothing. A member's other
// options (wait timeout, tracer, meter) serve only its own calls.
//
// Limits. Safety rests on time: the holder must finish within the
// validity time, and the masters' clocks must run at about the same rate.
// A process pause, a network delay or a master's clock jump can let a
// holder act after its lease ended while another owner acquires the lock
// (Kleppmann, "How to do distributed locking"). A master restarted
// without persistence forgets its keys and may grant the lock twice:
// delay restarts by a lease, or run AOF with fsync always. A hold's
// fencing token is the largest of its members', each max(counter + 1,
// server time in microseconds), so tokens from different masters are
// ordered only as well as their clocks agree: it is advisory. Where
// correctness depends on fencing, use a single-master lock's token or a
// store-side check; use Redlock where a rare double grant costs
// efficiency, not correctness.
package redlock
