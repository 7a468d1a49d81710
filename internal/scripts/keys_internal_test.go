package scripts

import (
	"testing"

	"github.com/relock-go/relock/internal/conn"
	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	require.Equal(t, "redisson_lock__channel:{order:1}", Prefix("redisson_lock__channel", "order:1"))
	require.Equal(t, "redisson_lock__channel:{tag}x", Prefix("redisson_lock__channel", "{tag}x"))
	require.Equal(t, "{order:1}:rwlock_timeout", Suffix("order:1", "rwlock_timeout"))
	require.Equal(t, "{tag}x:s", Suffix("{tag}x", "s"))
}

func TestCheckName(t *testing.T) {
	for _, name := range []string{"a}b", "a{}b", "a{b", "{}", "}{", "}a{"} {
		require.Contains(t, CheckName(name), "hash tag", name)
	}
	for _, name := range []string{"a", "order:1", "{a}{b}", "{user1}:lock", "}{a}", "x{a}}"} {
		require.Empty(t, CheckName(name), name)
	}
	// Every accepted name shares its slot with all its keys: all strings
	// of up to 5 characters over an alphabet of braces.
	alphabet := []byte("a{}")
	var walk func(prefix []byte)
	walk = func(prefix []byte) {
		if name := string(prefix); name != "" && CheckName(name) == "" {
			want := conn.Slot(name)
			for _, k := range []string{Prefix("redisson_lock_token", name), Suffix(name, "permits"), ReadTimeout(name, "o:1", 1), HolderLabel(name, "o:1")} {
				require.Equal(t, want, conn.Slot(k), "name %q, key %q", name, k)
			}
		}
		if len(prefix) == 5 {
			return
		}
		for _, c := range alphabet {
			walk(append(prefix, c))
		}
	}
	walk(nil)
}
