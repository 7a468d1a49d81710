package queue

// Hubs is how many clients have a hub now.
func Hubs() int { return hubs.Len() }

// Footprint is what h keeps per name: local queues, hand-off counters and
// subscribed channels.
func (h *Hub) Footprint() (queues, handOffs, channels int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queues), len(h.handOffs), h.ps.Channels()
}
