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
package conn
