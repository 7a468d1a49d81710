package conn

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSendOrder(t *testing.T) {
	o := sendOrder{known: true}
	o.sent("a")
	o.sent("b", "c")
	o.sent("a")
	o.confirmed("c")
	o.confirmed("a") // the first send of a
	chans, ok := o.refused()
	assert.True(t, ok)
	assert.Equal(t, []string{"b"}, chans, "the oldest send still due")
	chans, ok = o.refused()
	assert.True(t, ok)
	assert.Equal(t, []string{"a"}, chans)
	_, ok = o.refused()
	assert.False(t, ok, "nothing due: a refusal cannot be placed")

	o.lose()
	o.sent("d")
	_, ok = o.refused()
	assert.False(t, ok, "lost")
	assert.True(t, o.needsPing())
	o.pinged()
	assert.False(t, o.needsPing(), "a PING on its way")
	o.sent("e")
	o.lose() // a refusal after the PING: its PONG proves nothing
	assert.True(t, o.needsPing())
	o.pinged()
	o.sent("f")
	o.ponged()
	assert.False(t, o.known, "the first PONG is older than the loss")
	o.ponged()
	assert.True(t, o.known)
	chans, ok = o.refused()
	assert.True(t, ok)
	assert.Equal(t, []string{"f"}, chans, "the sends since the last PING")

	o.pinged()
	o.broken()
	o.ponged() // of the broken connection: never comes, and is ignored
	assert.False(t, o.known)
	assert.True(t, o.needsPing())

	assert.True(t, channelRefusal("NOPERM this user has no permissions to access one of the channels used as arguments"))
	assert.True(t, channelRefusal("NOPERM User app has no permissions to access the 'x' channel"))
	assert.False(t, channelRefusal("NOPERM this user has no permissions to run the 'subscribe' command"))
	assert.False(t, channelRefusal("BUSY Redis is busy running a script."))
	assert.True(t, pingRefusal("NOPERM this user has no permissions to run the 'ping' command"))
	assert.False(t, pingRefusal("NOPERM this user has no permissions to access one of the channels used as arguments"))
}
