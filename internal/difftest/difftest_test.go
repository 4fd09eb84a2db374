package difftest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/difftest"
)

// recorder is a testing.TB that keeps what a Twin reports.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatalf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
	r.fatal = true
	panic(r)
}

// agree runs tw on inputs under a recorder, as a Fatalf would stop it.
func agree(tw *difftest.Twin[int, int], inputs []int) (r *recorder, n int) {
	r = &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	n = tw.Agree(r, slices.Values(inputs))
	return r, n
}

func TestAgree(t *testing.T) {
	square := func(x int) int { return x * x }
	wrong := func(x int) int {
		if x%10 == 7 {
			return x*x + 1
		}
		return x * x
	}
	inputs := make([]int, 100)
	for i := range inputs {
		inputs[i] = i
	}
	t.Run("agreeing", func(t *testing.T) {
		r, n := agree(&difftest.Twin[int, int]{Name: "square", Fast: square, Ref: square}, inputs)
		if len(r.errs) != 0 || n != 100 {
			t.Fatalf("%d inputs, reports %q", n, r.errs)
		}
	})
	t.Run("disagreeing", func(t *testing.T) {
		r, _ := agree(&difftest.Twin[int, int]{Name: "square", Fast: wrong, Ref: square}, inputs)
		if len(r.errs) != 4 || !r.fatal {
			t.Fatalf("want 3 reports and a stop, got %q", r.errs)
		}
		if first := r.errs[0]; !strings.Contains(first, "on 7") || !strings.Contains(first, "fast: 50") || !strings.Contains(first, "ref: 49") {
			t.Fatalf("the report does not show the input and both answers: %s", first)
		}
	})
	t.Run("custom agreement", func(t *testing.T) {
		atLeast := func(fast, ref int) (bool, string) { return fast >= ref, "the fast answer must bound the reference's" }
		r, _ := agree(&difftest.Twin[int, int]{Name: "bound", Fast: wrong, Ref: square, Same: atLeast}, inputs)
		if len(r.errs) != 0 {
			t.Fatalf("reports %q", r.errs)
		}
		r, _ = agree(&difftest.Twin[int, int]{Name: "bound", Fast: square, Ref: wrong, Same: atLeast, Max: 1}, inputs)
		if len(r.errs) != 2 || !strings.Contains(r.errs[0], "must bound") {
			t.Fatalf("reports %q", r.errs)
		}
	})
	t.Run("no inputs", func(t *testing.T) {
		r, _ := agree(&difftest.Twin[int, int]{Name: "square", Fast: square, Ref: square}, nil)
		if len(r.errs) != 1 {
			t.Fatalf("reports %q", r.errs)
		}
	})
}
