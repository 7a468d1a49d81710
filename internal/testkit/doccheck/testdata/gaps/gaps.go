package gaps

const C = 1

// D is documented.
const D = 2

// Group documents E and G.
const (
	E = 3
	G = 4
)

func F() {}

type T struct{}

func (T) M() {}

// N is documented.
func (T) N() {}

func unexported() {}
