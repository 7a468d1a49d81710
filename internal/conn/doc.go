// Package conn is where relock speaks to a Redis client, and the only
// package that knows which client library that is (go-redis): the Client
// every other package holds, its commands and Replies, what an error
// from it means (Transient, MayHaveRun, Resend, TryAgain, IsReply), and
// what is kept per client.
//
// One registry keeps everything per client: its Pipe, Pool, PubSub and
// twin, and what a layer above keeps (PerClient: a hub, a topology). It is
// keyed by a weak pointer and an entry goes when its client is collected,
// so a service that makes clients per tenant or request does not grow;
// Ref leads back to the client without pinning it. Clients of other types
// are held strongly. Of finds the entry once and the Client carries it, so
// a primitive's calls pay no lookup (a Client found again through a Ref,
// or a cluster node's, looks it up).
//
// Pipe coalesces the commands of many goroutines: a few go to Redis at
// once; later ones queue, and the first sender to finish hands the queue,
// as one pipeline, to the goroutine at its front. An idle client adds no
// latency, and no goroutine is started.
//
// Pool runs short calls (a Redlock's members, a call whose client ignores
// context deadlines) on reused goroutines, since a fresh goroutine grows
// its stack through the client's call path each time. An idle Pool holds
// no goroutine.
//
// PubSub is the pub/sub transport: one connection per node (per master,
// with SSUBSCRIBE, on a cluster). A channel follows its slot when it
// moves, and its Listener is told a message may have been missed whenever
// that can be so, so that waiters try again instead of sleeping to their
// TTL.
package conn
