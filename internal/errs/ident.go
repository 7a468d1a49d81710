package errs

import "context"

// Ident names a primitive value in its errors and keeps why its constructor refused it.
type Ident struct {
	Primitive string // "lock", "rwlock", "semaphore", "redlock", "multilock"
	Name      string
	Invalid   string // why the constructor's arguments are bad; "" when good
}

// Check refuses a call with ErrInvalidArgument, before anything is written,
// on a value whose constructor refused its arguments, on the zero value
// (unmade names it: "Mutex not made by lock.New", say) or a nil context.
func (id *Ident) Check(op string, ctx context.Context, unmade Ident) error {
	switch {
	case id.Primitive == "":
		return Invalid(op, unmade.Primitive, "", unmade.Invalid)
	case id.Invalid != "":
		return Invalid(op, id.Primitive, id.Name, id.Invalid)
	case ctx == nil:
		return Invalid(op, id.Primitive, id.Name, "nil context")
	}
	return nil
}

// Wrap names the operation and the lock in err; nil stays nil.
func (id *Ident) Wrap(op string, err error) error { return New(op, id.Primitive, id.Name, err) }

// Refuse returns ErrInvalidArgument for op with reason, naming the lock.
func (id *Ident) Refuse(op, reason string) error {
	return Invalid(op, id.Primitive, id.Name, reason)
}
