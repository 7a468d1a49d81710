package redistest

import (
	"strconv"
	"strings"
)

// luaHeader reads the keys and arguments a script's header comment lists,
// one per line, as
//
//	-- KEYS[1]  the lock hash
//	--          (continued, indented)
//	-- ARGV[1]  owner id
//
// and returns each one's text (lines joined by a space), the n-th at
// index n-1, "" for a gap. Other forms (ARGV[4], ARGV[5], ...; KEYS[s*i])
// are left out. It lets a test hold a script's Go caller to the header.
func luaHeader(src string) (keys, args []string) {
	var last *string // the entry an indented comment line continues
	for line := range strings.Lines(src) {
		line = strings.TrimRight(line, "\r\n")
		rest, ok := strings.CutPrefix(line, "-- ")
		if !ok {
			last = nil
			continue
		}
		if text, cont := strings.CutPrefix(rest, "   "); cont && last != nil {
			*last += " " + strings.TrimSpace(text)
			continue
		}
		last = nil
		var list *[]string
		switch {
		case strings.HasPrefix(rest, "KEYS["):
			list = &keys
		case strings.HasPrefix(rest, "ARGV["):
			list = &args
		default:
			continue
		}
		num, text, ok := strings.Cut(rest[len("KEYS["):], "] ")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 1 {
			continue
		}
		for len(*list) < n {
			*list = append(*list, "")
		}
		(*list)[n-1] = strings.TrimSpace(text)
		last = &(*list)[n-1]
	}
	return keys, args
}
