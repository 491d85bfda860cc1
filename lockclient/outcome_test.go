package lockclient

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// An answer turned back into an error (the harness's side) has the
// outcome the client's error had: AnswerError is Outcome's inverse.
func TestAnswerErrorInvertsOutcome(t *testing.T) {
	for _, err := range []error{
		nil,
		ErrFenced,
		fmt.Errorf("storage: %w", ErrFenced),
		ErrLeaseLost,
		Failf("not holding %s", "k0"),
		context.DeadlineExceeded,
		errors.New("connection reset"),
	} {
		typ, text := Outcome(err)
		back := AnswerError(typ, text)
		if typ2, text2 := Outcome(back); typ2 != typ || text2 != text {
			t.Errorf("%v → %s %q → %v → %s %q", err, typ, text, back, typ2, text2)
		}
	}
	if typ, text := Outcome(ErrLeaseLost); typ != TypeFail || text != ErrorLeaseLost {
		t.Errorf("ErrLeaseLost is %s %q, want fail %q", typ, text, ErrorLeaseLost)
	}
	if err := AnswerError(TypeFail, ErrorFenced); !errors.Is(err, ErrFenced) {
		t.Errorf("a fail %q is %v, want ErrFenced", ErrorFenced, err)
	}
	if typ, text := Outcome(AnswerError(TypeInfo, "")); typ != TypeInfo || text != TypeInfo {
		t.Errorf("an info without text is %s %q", typ, text)
	}
}
