package conn

// Pipes is how many clients have a Pipe now.
func Pipes() int { return pipes.Len() }

// Twins is how many clients have a twin now.
func Twins() int { return twins.Len() }
