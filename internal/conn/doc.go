// Package conn keeps what relock holds per Redis client, without keeping
// the client alive.
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
// PubSub is the client's pub/sub transport: one connection per node (per
// master, with SSUBSCRIBE, on a Redis Cluster), each channel's messages
// passed to the Listener that subscribed it. A channel whose slot moves (a
// resharding, a failover) follows it to the new master, and its listener
// is told that a message may have been missed whenever that can be so (a
// broken connection, a move), so that waiters try again instead of
// sleeping to their TTL. A connection closes PubSubLinger after its last
// channel.
package conn
