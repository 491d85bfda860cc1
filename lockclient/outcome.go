package lockclient

import (
	"errors"
	"fmt"
)

// An op's outcome, both ways: Outcome from a client's error to its answer,
// AnswerError back. The package doc says why they live here.

// ErrFenced is the storage refusing a token: answered fail "fenced".
var ErrFenced = errors.New(ErrorFenced)

// ErrLeaseLost is a client that knows its lease is gone and so does not
// send the op at all: answered fail "lease-lost".
var ErrLeaseLost = Fail(errors.New(ErrorLeaseLost))

// definite marks an error whose op certainly did not take effect.
type definite struct{ err error }

func (d definite) Error() string { return d.err.Error() }
func (d definite) Unwrap() error { return d.err }

// Fail marks err as definite: the op certainly did not take effect.
func Fail(err error) error {
	if err == nil {
		return nil
	}
	return definite{err}
}

// Failf is Fail(fmt.Errorf(...)).
func Failf(format string, args ...any) error { return definite{fmt.Errorf(format, args...)} }

// Outcome is the answer type (TypeOK, TypeFail or TypeInfo, which are also
// the history's completion types) and error text for a client's error.
func Outcome(err error) (typ, text string) {
	var d definite
	switch {
	case err == nil:
		return TypeOK, ""
	case errors.Is(err, ErrFenced):
		return TypeFail, ErrorFenced
	case errors.As(err, &d):
		return TypeFail, err.Error()
	}
	return TypeInfo, err.Error()
}

// AnswerError is the error a client returned, from its answer's type and
// error text: the inverse of Outcome, for the harness's side. A fail or
// info without a text gets the type's name as its text.
func AnswerError(typ, text string) error {
	switch typ {
	case TypeOK:
		return nil
	case TypeFail:
		if text == ErrorFenced {
			return ErrFenced
		}
		return Fail(errors.New(orText(text, TypeFail)))
	}
	return errors.New(orText(text, TypeInfo))
}

func orText(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
