// Package doctor checks a Redis server, a Sentinel set or a cluster
// against the guarantees relock makes, for `relock doctor`: an eviction
// policy that can evict held locks (every relock key has a TTL, so
// volatile-* policies take them first), persistence that forgets locks on
// a restart, replicas and min-replicas-to-write beside relock's WAIT, the
// ACL permissions each primitive needs (with ACL DRYRUN where the user may
// run it, else by trying read commands that change nothing), the server's
// clock against this machine's (relock times leases on the server's
// clock), and the version and mode. Each finding has a severity (ok, info,
// warn, error) and, where something should change, the fix. A setting
// that could not be read is said to be so, never taken as fine: a server
// that hides its INFO (a proxy, a managed service, miniredis) gets "could
// not read" findings, with the severity of a warning where the guarantee
// depends on it.
package doctor
