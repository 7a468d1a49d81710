package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ClientInfo is one connection as CLIENT LIST reports it. Fields a server
// version does not report are zero; every field, known or not, is also in
// Fields.
type ClientInfo struct {
	ID    int64
	Addr  string
	LAddr string
	Name  string
	// Flags are the one-letter client flags, e.g. "N" (normal) or "P"
	// (pub/sub subscriber).
	Flags string
	DB    int
	// Sub, SSub and PSub count channel, shard channel and pattern
	// subscriptions.
	Sub  int
	SSub int
	PSub int
	// Cmd is the last command run, e.g. "client|list" or "ssubscribe".
	Cmd    string
	Fields map[string]string
}

// HasFlag reports whether the connection has the one-letter flag f.
func (ci ClientInfo) HasFlag(f byte) bool {
	return strings.IndexByte(ci.Flags, f) >= 0
}

// IsPubSub reports whether the connection is in pub/sub mode: subscribed to a
// channel, a shard channel or a pattern.
func (ci ClientInfo) IsPubSub() bool {
	return ci.Sub > 0 || ci.SSub > 0 || ci.PSub > 0 || ci.HasFlag('P')
}

// ClientList runs CLIENT LIST on c's server and parses the reply. The
// connection that ran the command is included (its Cmd is "client|list").
func ClientList(ctx context.Context, c *redis.Client) ([]ClientInfo, error) {
	s, err := c.ClientList(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("redistest: CLIENT LIST: %w", err)
	}
	return ParseClientList(s)
}

// CountPubSubConns counts the connections to c's server that are in pub/sub
// mode (see [ClientInfo.IsPubSub]), from every client, not only c. The
// connection that asks is not counted.
func CountPubSubConns(ctx context.Context, c *redis.Client) (int, error) {
	// CLIENT ID and CLIENT LIST must run on one connection to know which
	// entry is ours; a pooled client could send them on two.
	conn := c.Conn()
	defer conn.Close()
	self, err := conn.ClientID(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("redistest: CLIENT ID: %w", err)
	}
	s, err := conn.ClientList(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("redistest: CLIENT LIST: %w", err)
	}
	infos, err := ParseClientList(s)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ci := range infos {
		if ci.ID != self && ci.IsPubSub() {
			n++
		}
	}
	return n, nil
}

// ParseClientList parses the reply of CLIENT LIST: one line per connection,
// each a space-separated list of key=value fields. Client names cannot hold
// spaces, so splitting on spaces is exact.
func ParseClientList(s string) ([]ClientInfo, error) {
	var infos []ClientInfo
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ci, err := parseClientInfo(line)
		if err != nil {
			return nil, err
		}
		infos = append(infos, ci)
	}
	return infos, nil
}

func parseClientInfo(line string) (ClientInfo, error) {
	ci := ClientInfo{Fields: make(map[string]string)}
	for field := range strings.FieldsSeq(line) {
		key, val, ok := strings.Cut(field, "=")
		if !ok {
			return ClientInfo{}, fmt.Errorf("redistest: CLIENT LIST: field %q has no '=' in %q", field, line)
		}
		ci.Fields[key] = val

		var err error
		switch key {
		case "id":
			ci.ID, err = strconv.ParseInt(val, 10, 64)
		case "addr":
			ci.Addr = val
		case "laddr":
			ci.LAddr = val
		case "name":
			ci.Name = val
		case "flags":
			ci.Flags = val
		case "db":
			ci.DB, err = strconv.Atoi(val)
		case "sub":
			ci.Sub, err = strconv.Atoi(val)
		case "ssub":
			ci.SSub, err = strconv.Atoi(val)
		case "psub":
			ci.PSub, err = strconv.Atoi(val)
		case "cmd":
			ci.Cmd = val
		}
		if err != nil {
			return ClientInfo{}, fmt.Errorf("redistest: CLIENT LIST: field %s=%q: %w", key, val, err)
		}
	}
	if _, ok := ci.Fields["id"]; !ok {
		return ClientInfo{}, fmt.Errorf("redistest: CLIENT LIST: no id in %q", line)
	}
	return ci, nil
}
