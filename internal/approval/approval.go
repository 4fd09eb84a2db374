// Package approval holds the questions aegis asks a person (DESIGN.md R21):
// a call the policy answered `ask` is held, and a pending approval is made
// for exactly that call — its session, principal, server, tool, the hash
// of its arguments as they would be forwarded, the hash of the policy
// that asked, and an expiry. A person answers it (approve or deny, for
// this call or for the same capabilities for the rest of the session)
// through `aegis approvals`, the console or the MCP client, and the held
// call goes on or is refused.
//
// An approval is single-use: it is answered once, and an approved one is
// taken once, by the call it was made for, and only while its arguments
// hash and policy hash still match; an expired one can no longer be
// answered. The store is a SQLite database in aegis's state directory, so
// that another process (the CLI, the console) can answer what `aegis run`
// holds.
package approval

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Scope is how far an approval reaches.
type Scope string

const (
	// ScopeCall approves the one held call.
	ScopeCall Scope = "call"
	// ScopeSession approves the held call, and later calls of the same
	// tool in the same session whose capabilities are all among its own.
	ScopeSession Scope = "session"
)

// ParseScope reads a scope as a person writes it.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeCall, ScopeSession:
		return Scope(s), nil
	}
	return "", fmt.Errorf("scope %q: want call or session", s)
}

// State is where an approval stands.
type State string

const (
	Pending  State = "pending"  // waiting for a person
	Approved State = "approved" // approved, not yet taken by its call
	Denied   State = "denied"
	Expired  State = "expired" // nobody answered in time, or the call went
	Used     State = "used"    // approved and taken by its call
)

// Channel names how a person answered.
const (
	ChannelCLI         = "cli"
	ChannelConsole     = "console"
	ChannelElicitation = "elicitation"
)

// A Request is one question: the held call, and what aegis derived from
// it, for a person to judge.
type Request struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`

	Session   string `json:"session"`
	Principal string `json:"principal"`
	Server    string `json:"server"`
	// Method is the request's method; "" for a tools/call.
	Method string `json:"method,omitempty"`
	Tool   string `json:"tool"`
	// ArgsHash and PolicyHash bind the approval to the call's exact
	// arguments (as they would be forwarded) and to the policy that
	// asked: hex SHA-256.
	ArgsHash   string `json:"args_hash"`
	PolicyHash string `json:"policy_hash"`
	// Seq is the chain entry that recorded the ask (in Lane, "" for the
	// first lane).
	Seq  uint64 `json:"seq"`
	Lane string `json:"lane,omitempty"`

	// Caps are the capabilities the call derived ("fs.write /home/a/x").
	Caps []string `json:"caps"`
	// Rules asked; Reason says why.
	Rules  []string `json:"rules"`
	Reason string   `json:"reason"`
	// Arguments are the call's arguments as they would be forwarded, with
	// secrets redacted, for the person to read.
	Arguments json.RawMessage `json:"arguments"`
}

// An Answer is a person's answer.
type Answer struct {
	Approve bool      `json:"approve"`
	Scope   Scope     `json:"scope"`
	By      string    `json:"by"`
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
}

// An Approval is a request and where it stands.
type Approval struct {
	Request
	State  State   `json:"state"`
	Answer *Answer `json:"answer,omitempty"` // nil while pending, and when it expired
}

// NewID returns a fresh approval id: 16 hex digits, random.
func NewID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Errors of answering and taking.
var (
	ErrUnknown   = errors.New("no such approval")
	ErrAmbiguous = errors.New("the id prefix names more than one approval")
	ErrAnswered  = errors.New("the approval was answered already")
	ErrExpired   = errors.New("the approval has expired")
	ErrMismatch  = errors.New("the approval was made for other arguments or another policy")
)

// checkID refuses what cannot be an id or a prefix of one.
func checkID(id string) error {
	if len(id) < 4 || len(id) > 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("approval id %q: want 4 to 16 lower-case hex digits", id)
	}
	return nil
}
