package storeapi

import (
	"errors"
	"fmt"
	"testing"
)

// TestAnswers: each error of the table is answered by its own row,
// however deep it is wrapped (no row before it swallows it), every row
// answers on the Redis face (its own text or the row's), an HTTP answer
// is a whole problem, and the errors that mean "unavailable" are 503s.
func TestAnswers(t *testing.T) {
	seen := map[error]bool{}
	for i, a := range Answers {
		if seen[a.Err] {
			t.Errorf("row %d: %v twice", i, a.Err)
		}
		seen[a.Err] = true
		got, ok := AnswerFor(fmt.Errorf("apply: %w", a.Err))
		if !ok || got.Err != a.Err {
			t.Errorf("AnswerFor(%v) = row of %v", a.Err, got.Err)
		}
		if (a.HTTP.Status == 0) != (a.HTTP.Slug == "") || (a.HTTP.Slug == "") != (a.HTTP.Title == "") {
			t.Errorf("%v: a partial problem %+v", a.Err, a.HTTP)
		}
		if Unavailable(a.Err) != (a.HTTP.Status == 503) {
			t.Errorf("%v: unavailable %v, status %d", a.Err, Unavailable(a.Err), a.HTTP.Status)
		}
	}
	if _, ok := AnswerFor(errors.New("else")); ok || ProblemOf(errors.New("else")) != (Problem{}) {
		t.Error("an error of no row has an answer")
	}
}
