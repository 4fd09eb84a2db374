package strictyaml

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Pos is a position in a YAML file. A struct field of type Pos tagged
// `yaml:"-"` is filled with the position of the mapping the struct was
// decoded from.
type Pos struct {
	File      string
	Line, Col int
}

// PosOf returns the position of n in file.
func PosOf(file string, n *yaml.Node) Pos {
	return Pos{File: file, Line: n.Line, Col: n.Column}
}

// String returns the position as file:line:col.
func (p Pos) String() string {
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem found at a position of a YAML file.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

// Errorf returns an [Error] at the position of n.
func Errorf(file string, n *yaml.Node, format string, args ...any) *Error {
	return &Error{File: file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// ErrorAt returns an [Error] at p.
func ErrorAt(p Pos, format string, args ...any) *Error {
	return &Error{File: p.File, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf(format, args...)}
}

// Error returns the error as file:line:col: message.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Pos returns the position of the error.
func (e *Error) Pos() Pos { return Pos{File: e.File, Line: e.Line, Col: e.Col} }

// Errors is a list of problems, in the order they were found. Decode
// returns at most [MaxErrors] of them, plus one saying that it stopped.
type Errors []*Error

// MaxErrors is how many errors Decode collects before it stops.
const MaxErrors = 10

// Error returns the errors, one per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the errors, so that errors.As finds an [*Error] in them.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// List collects errors up to [MaxErrors]; its zero value is ready to use.
// Packages that validate a decoded document use it to report their own
// errors the way Decode does.
type List struct {
	errs Errors
	full bool
}

// Add records err. An [*Error] or [Errors] is kept as it is; any other
// error is placed at the position of n in file. A nil err is ignored.
func (l *List) Add(file string, n *yaml.Node, err error) {
	switch e := err.(type) {
	case nil:
	case *Error:
		l.add(e)
	case Errors:
		for _, e := range e {
			l.add(e)
		}
	default:
		l.add(Errorf(file, n, "%s", err.Error()))
	}
}

// AddError records e.
func (l *List) AddError(e *Error) { l.add(e) }

func (l *List) add(e *Error) {
	if l.full {
		return
	}
	if len(l.errs) == MaxErrors {
		l.full = true
		l.errs = append(l.errs, &Error{File: e.File, Line: e.Line, Col: e.Col, Msg: "too many errors"})
		return
	}
	l.errs = append(l.errs, e)
}

// Full reports whether the list has stopped collecting.
func (l *List) Full() bool { return l.full }

// Len returns the number of errors collected.
func (l *List) Len() int { return len(l.errs) }

// Err returns the collected errors as [Errors], or nil if there are none.
func (l *List) Err() error {
	if len(l.errs) == 0 {
		return nil
	}
	return l.errs
}
