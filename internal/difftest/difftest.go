// Package difftest is the one differential harness of aegis's speed twins
// (docs/design/fast-paths.md): it runs a fast path and the reference it
// must agree with on the same inputs and reports where they part, with the
// input and both answers. It owns only the comparing and the reporting;
// each package's tests own their inputs (generated, fuzzed or a table) and
// say what agreeing means for their pair, which need not be equality (a
// fast path that may give up, a cost bound that may exceed).
//
// It is imported by tests only.
package difftest

import (
	"fmt"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A Twin is a fast path and its reference, each a function of one input.
type Twin[In, Out any] struct {
	// Name names the pair in every report, such as "Decide".
	Name string
	// Fast and Ref are the fast path and its reference.
	Fast, Ref func(In) Out
	// Same reports whether fast's answer agrees with ref's, and if not,
	// may say why (or return ""). Nil means the answers must be equal as
	// [cmp.Equal] with Opts compares them, and the report carries their
	// diff.
	Same func(fast, ref Out) (ok bool, why string)
	// Opts are the go-cmp options of the default comparison.
	Opts []cmp.Option
	// Show writes an input in a report; nil uses %+v. Likewise ShowOut for
	// an answer.
	Show    func(In) string
	ShowOut func(Out) string
	// Max is how many disagreements Agree reports before it stops; zero
	// means 3.
	Max int
}

// Check runs both sides on in and reports a disagreement as an error of t.
// It returns the answers, and whether they agree, for a test that counts
// what it saw.
func (tw *Twin[In, Out]) Check(t testing.TB, in In) (fast, ref Out, ok bool) {
	t.Helper()
	fast, ref = tw.Fast(in), tw.Ref(in)
	ok, why := tw.agree(fast, ref)
	if !ok {
		t.Errorf("%s: the fast path and its reference disagree on %s\n fast: %s\n  ref: %s%s",
			tw.Name, tw.show(in), tw.showOut(fast), tw.showOut(ref), why)
	}
	return fast, ref, ok
}

// Agree runs both sides on every input and reports the first Max
// disagreements; at the last it fails t at once. It returns how many inputs
// were compared.
func (tw *Twin[In, Out]) Agree(t testing.TB, inputs iter.Seq[In]) int {
	t.Helper()
	limit := tw.Max
	if limit <= 0 {
		limit = 3
	}
	// Pulled rather than ranged over, so that a report names the test's
	// line, not the loop body's or the iterator's.
	next, stop := iter.Pull(inputs)
	defer stop()
	n, bad := 0, 0
	for in, more := next(); more; in, more = next() {
		n++
		if _, _, ok := tw.Check(t, in); !ok {
			if bad++; bad == limit {
				t.Fatalf("%s: stopped at %d disagreements, after %d inputs", tw.Name, bad, n)
			}
		}
	}
	if n == 0 {
		t.Errorf("%s: no inputs: the comparison held vacuously", tw.Name)
	}
	return n
}

func (tw *Twin[In, Out]) agree(fast, ref Out) (bool, string) {
	if tw.Same != nil {
		ok, why := tw.Same(fast, ref)
		if why != "" {
			why = "\n  why: " + why
		}
		return ok, why
	}
	if d := cmp.Diff(ref, fast, tw.Opts...); d != "" {
		return false, "\n diff (-ref +fast):\n" + d
	}
	return true, ""
}

func (tw *Twin[In, Out]) show(in In) string {
	if tw.Show != nil {
		return tw.Show(in)
	}
	return fmt.Sprintf("%+v", in)
}

func (tw *Twin[In, Out]) showOut(out Out) string {
	if tw.ShowOut != nil {
		return tw.ShowOut(out)
	}
	return fmt.Sprintf("%+v", out)
}
