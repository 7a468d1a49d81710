package scripts

import (
	"regexp"
	"strconv"
	"strings"
)

// A script checks (may, in lua/acl.lua) only the commands it runs after
// its first write: an earlier refusal changes nothing, and a check costs
// about a µs. Redis 7.0's own refusal names no command but gives the
// script's line, from which named words it as may would.

var (
	// How Redis words an ACL refusal of a script's command, key, channel.
	refusedCommand = regexp.MustCompile(`can't run this command|permissions to run the`)
	refusedKey     = regexp.MustCompile(`can't access at least one of the keys|permissions to access`)
	refusedChannel = regexp.MustCompile(`can't publish to the channel|permissions to access (one of the channels|a channel)`)
	scriptLine     = regexp.MustCompile(`@user_script:(\d+)`)
	// keyRef is a KEYS[i] a line passes, which names the channel refused.
	keyRef = regexp.MustCompile(`KEYS\[(\d+)\]`)
	// callee is a command a line runs by name.
	callee = regexp.MustCompile(`redis\.p?call\(\s*'([a-z|]+)'`)
)

// Refusal is an ACL refusal of a script's command, worded as may's own
// error reply.
type Refusal string

// Error is the refusal as may words it.
func (e Refusal) Error() string { return string(e) }

// RedisError marks a Refusal as a server reply (redis.Error).
func (Refusal) RedisError() {}

// named rewords err, Redis's refusal of a command of s, as may would when
// the reported line runs one command by name; else nil. args are the
// EVALSHA's (keys from args[3]), to name a refused key or channel.
func (s *Script) named(err error, args []any) error {
	if err == nil {
		return nil // before the string work, on every successful call
	}
	msg := err.Error()
	command, channel := refusedCommand.MatchString(msg), refusedChannel.MatchString(msg)
	if strings.HasPrefix(msg, "NOPERM relock:") || (!command && !channel && !refusedKey.MatchString(msg)) {
		return nil
	}
	m := scriptLine.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(s.Source(), "\n")
	if n < 1 || n > len(lines) {
		return nil
	}
	calls := callee.FindAllStringSubmatch(lines[n-1], -1)
	if len(calls) != 1 {
		return nil // none by name, or more than one: which is not known
	}
	name := strings.ToUpper(calls[0][1])
	key, named := keyOf(lines[n-1], args)
	switch {
	case channel && named:
		return Refusal("NOPERM relock: this user may not " + name + " to channel " + key)
	case command:
		return Refusal("NOPERM relock: this user may not run " + name)
	case named:
		return Refusal("NOPERM relock: this user may not " + name + " on key " + key)
	}
	return Refusal("NOPERM relock: this user may not " + name + " on one of its keys")
}

// keyOf is the key (or channel) a line passes as its one KEYS[i], from args.
func keyOf(line string, args []any) (string, bool) {
	m := keyRef.FindAllStringSubmatch(line, -1)
	if len(m) != 1 {
		return "", false
	}
	if i, _ := strconv.Atoi(m[0][1]); i >= 1 && 2+i < len(args) {
		k, ok := args[2+i].(string)
		return k, ok
	}
	return "", false
}
