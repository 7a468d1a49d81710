// Package minacl is the least a Redis user needs to run each primitive on
// names under a prefix: the commands, key patterns and channel patterns,
// per deployment (a Cluster's sharded pub/sub, replica sync's INFO, ROLE
// and WAIT). relock doctor checks a user against it, and docs/operations.md
// tables it. Its tests run every primitive as a user granted exactly this,
// and take each permission away in turn to see the refusal named.
package minacl
