// Package owner carries the identity of a lock owner in a context.Context.
//
// Go has no thread id, so the owner that Redisson spells uuid:threadId is a
// value in the context: "<process uuid>:<sequence>". An acquire on a context
// without an owner mints one and returns a context carrying it, so nested
// calls that pass that context on re-enter instead of deadlocking.
package owner
