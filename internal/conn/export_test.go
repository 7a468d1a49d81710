package conn

// Pipes is how many clients have a Pipe now: an entry in the registry.
func Pipes() int { return clients.Len() }

// Twins is how many clients have a twin now.
func Twins() int {
	n := 0
	clients.m.Range(func(_, v any) bool {
		if v.(*shared).twinMade.Load() {
			n++
		}
		return true
	})
	return n
}
