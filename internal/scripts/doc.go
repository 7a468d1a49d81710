// Package scripts runs the Lua scripts of the primitives. Each script lives
// in its own .lua file beside the package that owns it, embedded into the
// binary (the go:embed directive) and opened here; calls go out as EVALSHA
// and fall back to EVAL (which also loads the script) only when Redis
// answers NOSCRIPT, so the script body crosses the network once per
// server, not once per call.
package scripts
