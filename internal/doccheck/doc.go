// Package doccheck holds the test that keeps the module's documentation
// whole: every exported identifier of every package (what `go doc`
// shows) has a doc comment, and every public package has a package
// comment and an Example. It has no code of its own; Undocumented is
// exported for the test and for anyone who wants the list.
package doccheck
