// Package errs declares the sentinel errors shared by every relock primitive
// and the error type that names the operation and the lock. The public
// packages re-export the sentinels so errors.Is works across primitives.
// A primitive value's Ident names it in those errors, and checks every
// call's arguments before anything is written.
package errs
