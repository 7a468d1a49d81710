// Package batch coalesces the commands of many goroutines into pipelines.
// A Pipe lets a few commands go to Redis at once, each on its own
// connection; a command that arrives while that many are in flight waits
// in a queue, and the first goroutine to finish hands the whole queue, as
// one pipeline, to the goroutine at its front. An idle client so adds no
// latency (a lone command is sent at once), while under load the round
// trips, system calls and connections per command fall with the load, as
// auto-pipelining clients do. No goroutine is started: the goroutines that
// wait take turns sending for each other. A Pipe goes with its client
// (the registry holds clients weakly, see package perclient).
package batch
