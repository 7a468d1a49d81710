// Package doccheck holds the tests that keep the module's documentation
// whole: every exported identifier of every package (what `go doc` shows)
// has a doc comment (Undocumented), and every exported function and
// method of the public packages has an Example (WithoutExample), so that
// pkg.go.dev shows one and `go test` runs it; and ARCHITECTURE.md names
// only identifiers the module still declares (StaleNames).
package doccheck
