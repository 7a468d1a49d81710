package conn

// Pipes is how many clients have a Pipe now.
func Pipes() int { return pipes.Len() }
