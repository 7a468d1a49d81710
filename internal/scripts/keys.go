package scripts

import (
	"fmt"
	"strings"
)

// Prefix names an auxiliary key or channel "prefix:{name}", or
// "prefix:name" when name holds a "{", as Redisson's prefixName does.
func Prefix(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// Suffix names "{name}:suffix", or "name:suffix" when name holds a "{", as
// Redisson's suffixName does.
func Suffix(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// CheckName returns why name cannot be a lock's name, "" when it can: it
// must hold no brace, or a non-empty hash tag of its own, so that its
// auxiliary keys (Prefix, Suffix) share its slot. Other braces ("a}b",
// "{}") would scatter a lock over slots (CROSSSLOT on a cluster), so the
// rule holds on every server alike.
func CheckName(name string) string {
	if !strings.ContainsAny(name, "{}") {
		return ""
	}
	if s := strings.IndexByte(name, '{'); s >= 0 {
		if e := strings.IndexByte(name[s+1:], '}'); e > 0 {
			return ""
		}
	}
	return fmt.Sprintf("name %q holds a brace but no hash tag: a name may hold \"{\" or \"}\" only around a non-empty hash tag (as \"{user1}:lock\"), so that all its keys share one cluster slot", name)
}
