// Package keys names the auxiliary keys and channels of a lock the way
// Redisson names them, so that every key a script touches shares the lock's
// cluster slot and a Java service using Redisson meets the same keys, and
// computes the Redis Cluster slot of a key for batching.
package keys
