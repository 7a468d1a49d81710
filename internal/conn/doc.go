// Package conn is where relock speaks to a Redis client, and the only
// package that knows which client library that is (go-redis): the Client
// every other package holds, the commands it sends and the Replies they
// read, what an error from it means (Transient, MayHaveRun, Resend,
// TryAgain, IsReply), what it keeps per client (without keeping the
// client alive), the pipe that coalesces commands, the pub/sub transport,
// the workers that bound a call, and the client's servers.
//
// Client wraps the client a primitive was made on (Of). Do and Pipelined
// send plain commands; a Cmd (NewCmd) is a command built first, for a
// script's EVALSHA that may be sent again as EVAL, or a pipeline of
// scripts and a WAIT (Exec); Node is the client of the server that holds
// a key's slot. Another Redis client library would be another
// implementation of this package, and of nothing else.
//
// Map and Ref are the registry: a service that makes clients per tenant
// or per request, and drops them, must not grow. Map is keyed by a weak
// pointer to the client, and an entry goes when its client is garbage
// collected; Ref gives the state a way back to its client that does not
// pin it either. Clients that are not go-redis's own pointer types
// (another implementation of redis.UniversalClient) are held strongly, as
// a plain map would.
//
// Pipe coalesces the commands of many goroutines into pipelines. It lets
// a few commands go to Redis at once, each on its own connection; a
// command that arrives while that many are in flight waits in a queue,
// and the first goroutine to finish hands the whole queue, as one
// pipeline, to the goroutine at its front. An idle client so adds no
// latency (a lone command is sent at once), while under load the round
// trips, system calls and connections per command fall with the load, as
// auto-pipelining clients do. No goroutine is started: the goroutines that
// wait take turns sending for each other.
//
// Pool runs short calls on goroutines that are kept for a while and
// reused. A Redlock tries and releases every member at once, one
// goroutine per member, and a call whose client ignores context deadlines
// runs on a worker so that its caller can leave at its bound; a goroutine
// started for each would grow its stack anew through the Redis client's
// call path every time, which costs more CPU than the call's own work on
// a small machine. A Pool hands a call to a worker that is idle, and
// starts one only when none is; a worker that has had nothing to do for
// the linger ends, so an idle Pool holds no goroutine.
//
// PubSub is the client's pub/sub transport: one connection per node (per
// master, with SSUBSCRIBE, on a Redis Cluster), each channel's messages
// passed to the Listener that subscribed it. A channel whose slot moves (a
// resharding, a failover) follows it to the new master, and its listener
// is told that a message may have been missed whenever that can be so (a
// broken connection, a move), so that waiters try again instead of
// sleeping to their TTL. A connection closes PubSubLinger after its last
// channel.
package conn
