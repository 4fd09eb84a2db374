package capability

// Origin says who started the session a call belongs to (DESIGN.md R19).
// The zero Origin is unknown: a policy rule that matches on origin grants
// nothing to a call of unknown origin, and a deny rule that matches on
// origin applies to it whatever origin it names. The gateway MUST set the
// origin; the session store reports a session it never opened as unknown.
type Origin uint8

// The origins.
const (
	OriginUnknown Origin = iota
	Interactive          // a person is at the client
	Unattended           // started by a trigger, a schedule or another agent
)

// String returns "interactive", "unattended" or "unknown".
func (o Origin) String() string {
	switch o {
	case Interactive:
		return "interactive"
	case Unattended:
		return "unattended"
	}
	return "unknown"
}

// ParseOrigin reads "interactive" or "unattended"; anything else is
// OriginUnknown and false.
func ParseOrigin(s string) (Origin, bool) {
	switch s {
	case "interactive":
		return Interactive, true
	case "unattended":
		return Unattended, true
	}
	return OriginUnknown, false
}
