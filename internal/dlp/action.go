package dlp

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Action is what the gateway does with a call or a result that holds a finding.
// Actions are ordered by strictness: deny, then ask, then redact, then report.
type Action uint8

const (
	// ActionDeny refuses the call, or withholds the result. It is the zero Action: an
	// unconfigured kind fails closed.
	ActionDeny Action = iota
	// ActionAsk holds the call for a human's approval.
	ActionAsk
	// ActionRedact replaces each finding's span with "[REDACTED:<kind>]" and lets the
	// call or result through.
	ActionRedact
	// ActionReport records the finding and changes nothing: the loud name of "allow".
	ActionReport
)

var actionNames = [...]string{ActionDeny: "deny", ActionAsk: "ask", ActionRedact: "redact", ActionReport: "report"}

// String returns the action's name as config files spell it, such as "redact".
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// ParseAction reads an action's name: deny, ask, redact or report.
func ParseAction(s string) (Action, error) {
	for a, name := range actionNames {
		if s == name {
			return Action(a), nil
		}
	}
	return ActionDeny, fmt.Errorf("dlp: unknown action %q (want deny, ask, redact or report)", s)
}

// Stricter reports whether a is stricter than b.
func (a Action) Stricter(b Action) bool { return a < b }

// Actions says what to do for each kind of finding. The zero value denies every kind.
type Actions struct {
	// Default is the action for kinds ByKind does not name. Zero is ActionDeny.
	Default Action
	// ByKind holds the per-kind actions. A nil map names no kind.
	ByKind map[Kind]Action
}

// ParseActions reads per-kind actions from a config map such as
// {"default": "redact", "private_key": "deny", "card": "ask"}. The key "default" sets
// [Actions.Default]; every other key must be a [Kind]. The error names every unknown
// kind and every unknown action.
func ParseActions(m map[string]string) (Actions, error) {
	acts := Actions{ByKind: make(map[Kind]Action, len(m))}
	var errs []error
	var unknown []string
	for _, key := range slices.Sorted(maps.Keys(m)) {
		a, err := ParseAction(m[key])
		if err != nil {
			errs = append(errs, fmt.Errorf("dlp: %s: unknown action %q (want deny, ask, redact or report)", key, m[key]))
		}
		switch k := Kind(key); {
		case key == "default":
			acts.Default = a
		case k.Known():
			acts.ByKind[k] = a
		default:
			unknown = append(unknown, fmt.Sprintf("%q", key))
		}
	}
	if len(unknown) > 0 {
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = string(k)
		}
		errs = append(errs, fmt.Errorf("dlp: unknown finding kind %s (known: default, %s)",
			strings.Join(unknown, ", "), strings.Join(names, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return Actions{}, err
	}
	return acts, nil
}

// For returns the action for kind k. A nil *Actions denies every kind.
func (a *Actions) For(k Kind) Action {
	if a == nil {
		return ActionDeny
	}
	if act, ok := a.ByKind[k]; ok {
		return act
	}
	return a.Default
}

// Decide returns the strictest action for the kinds found. With nothing found it
// returns ActionReport and false: there is nothing to do.
func (a *Actions) Decide(fs []Finding) (Action, bool) {
	act, ok := ActionReport, false
	for _, f := range fs {
		if x := a.For(f.Kind); !ok || x.Stricter(act) {
			act, ok = x, true
		}
	}
	return act, ok
}

// DecideLocated is [Actions.Decide] for findings in a JSON document.
func (a *Actions) DecideLocated(ls []Located) (Action, bool) {
	act, ok := ActionReport, false
	for _, l := range ls {
		if x := a.For(l.Kind); !ok || x.Stricter(act) {
			act, ok = x, true
		}
	}
	return act, ok
}

// Redacts reports whether findings of kind k are to be redacted: a predicate for
// [AppendRedacted] and [RedactJSON].
func (a *Actions) Redacts(k Kind) bool { return a.For(k) == ActionRedact }
