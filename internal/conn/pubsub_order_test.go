package conn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.True(t, o.needsMarker())
	m1 := o.nextMarker("redisson_lock__channel:{app:x}")
	o.marked(m1, nil)
	assert.False(t, o.needsMarker(), "a marker on its way")
	o.sent("e")
	o.lose() // a refusal after the marker: its reply proves nothing
	require.True(t, o.needsMarker())
	m2 := o.nextMarker("redisson_lock__channel:{app:x}")
	require.NotEqual(t, m1, m2)
	o.marked(m2, nil)
	o.sent("f")
	o.confirmed("f") // a reply from before the marker: f's send stays due
	assert.False(t, o.answered(m1), "an earlier marker's reply")
	assert.False(t, o.known)
	assert.True(t, o.answered(m2))
	assert.True(t, o.known)
	chans, ok = o.refused()
	assert.True(t, ok)
	assert.Equal(t, []string{"f"}, chans, "the sends since the last marker")

	o.lose()
	o.marked(o.nextMarker("ch"), nil)
	o.marked("", assert.AnError) // a marker that could not be written
	assert.True(t, o.needsMarker())
	m3 := o.nextMarker("ch")
	o.marked(m3, nil)
	o.broken()
	assert.False(t, o.answered(m3), "sent on a connection that failed")
	assert.False(t, o.known)
	assert.True(t, o.needsMarker())
}

// While a marker is on its way, a refusal answers a send before it: the
// sends since are known, and a marker unanswered for long is sent again.
func TestSendOrderAwaitingAMarker(t *testing.T) {
	var o sendOrder
	o.lose()
	o.sent("before")
	require.False(t, o.awaiting())
	o.marked(o.nextMarker("ch"), nil)
	o.sent("after")
	assert.True(t, o.awaiting())
	assert.False(t, o.sentSince("before"))
	assert.True(t, o.sentSince("after"))
	assert.False(t, o.needsMarker(), "the marker is young")
	o.sentAt = time.Now().Add(-markerPatience - time.Millisecond)
	assert.True(t, o.needsMarker(), "a marker unanswered for long is taken as lost")
	o.lose()
	assert.False(t, o.awaiting(), "lost since the marker")
}

func TestMarkerSharesTheChannelsSlot(t *testing.T) {
	var o sendOrder
	for _, ch := range []string{"redisson_lock__channel:{app:x}", "redisson_lock__channel:app:{user1}:lock", "plain", "a{b"} {
		m := o.nextMarker(ch)
		require.NotEmpty(t, m, ch)
		assert.Equal(t, Slot(ch), Slot(m), ch)
	}
	assert.Empty(t, o.nextMarker("a}b{"), "no marker where its slot would differ")
}

func TestChannelRefusal(t *testing.T) {
	assert.True(t, channelRefusal("NOPERM this user has no permissions to access one of the channels used as arguments"))
	assert.True(t, channelRefusal("NOPERM User app has no permissions to access the 'x' channel"))
	assert.False(t, channelRefusal("NOPERM this user has no permissions to run the 'subscribe' command"))
	assert.False(t, channelRefusal("NOPERM User channel_x has no permissions to run the 'unsubscribe' command"))
	assert.False(t, channelRefusal("BUSY Redis is busy running a script."))
}
