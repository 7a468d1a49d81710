// Package scripts runs the Lua scripts of the primitives. Each script lives
// in its own .lua file beside the package that owns it, embedded into the
// binary (the go:embed directive) and opened here; calls go out as EVALSHA
// and fall back to EVAL (which also loads the script) only when Redis
// answers NOSCRIPT, so the script body crosses the network once per
// server, not once per call.
//
// The package also names the keys and channels those scripts touch, the
// way Redisson names them, so that every key a script touches shares the
// lock's cluster slot and a Java service using Redisson meets the same
// keys; it computes the Redis Cluster slot of a key, checks lock names,
// and says which commands and key patterns each primitive needs of an
// ACL (MinimalACL).
package scripts
