// Package errs gives internal packages the root package's sentinel errors and
// error type (which public packages re-export, so errors.Is works across them)
// and Ident, naming a value in errors and checking call arguments up front.
package errs
