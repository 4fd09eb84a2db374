package policy

import "fmt"

// Effect is what a rule, a verdict or a decision says about a call. The zero
// Effect is Deny, so a Decision that nothing filled in denies.
type Effect uint8

// The effects, from the zero value. When several rules match, Deny beats
// Ask beats Allow.
const (
	Deny Effect = iota
	Allow
	Ask
)

// String returns "deny", "allow" or "ask".
func (e Effect) String() string {
	switch e {
	case Deny:
		return "deny"
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return fmt.Sprintf("effect(%d)", uint8(e))
}

// rank orders effects by precedence: a higher rank wins. An effect out of
// range ranks as Deny.
func (e Effect) rank() int {
	if e < Effect(len(ranks)) {
		return int(ranks[e])
	}
	return 2
}

var ranks = [...]uint8{Deny: 2, Allow: 0, Ask: 1}

// verb is the effect as a verb in a reason: "rule x denies ...".
func (e Effect) verb() string {
	switch e {
	case Allow:
		return "allows"
	case Ask:
		return "asks before"
	}
	return "denies"
}

func parseEffect(s string) (Effect, bool) {
	switch s {
	case "deny":
		return Deny, true
	case "allow":
		return Allow, true
	case "ask":
		return Ask, true
	}
	return Deny, false
}

// Mode says whether a rule, or a whole policy, is enforced or only
// recorded. A shadow rule never changes a decision; the decision carries
// what it would have been with shadow rules enforced (DESIGN.md R9).
type Mode uint8

// The modes; the zero Mode enforces.
const (
	Enforce Mode = iota
	Shadow
)

// String returns "enforce" or "shadow".
func (m Mode) String() string {
	switch m {
	case Enforce:
		return "enforce"
	case Shadow:
		return "shadow"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

func parseMode(s string) (Mode, bool) {
	switch s {
	case "enforce":
		return Enforce, true
	case "shadow":
		return Shadow, true
	}
	return Enforce, false
}
