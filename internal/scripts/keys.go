package scripts

import (
	"fmt"
	"strings"
)

// Prefix names an auxiliary key or channel "prefix:{name}", or "prefix:name"
// when name already holds a "{" (its own hash tag then decides the slot), as
// Redisson's prefixName does.
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

// CheckName returns why name cannot be a lock's name, "" when it can. Every
// key of a lock shares name's cluster slot only if name's braces leave the
// tag of its auxiliary keys (Prefix and Suffix) equal to its own: a name
// with no brace, or one with a hash tag of its own (a "{" and, after it, a
// "}" with something between). Any other "{" or "}" ("a}b", "a{b", "{}")
// would scatter the keys of one lock over several slots, which a cluster
// refuses (CROSSSLOT), so the rule holds on every server alike.
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
