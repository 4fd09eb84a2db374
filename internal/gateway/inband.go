package gateway

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"sync"

	"github.com/aegis-mcp/aegis/internal/approval"
)

// This file asks a person in the call's own round trips: the form a client
// of MCP 2026-07-28 answers, where a server cannot send the client a
// request of its own and asks in an incomplete result instead (see the
// relay's mrtr.go).
//
// A call the policy answers ask, from a client that declared elicitation
// and that retries nothing of the server's, is not held: its question is
// stored as any other (so `aegis approvals` and the console can answer it
// too) and the call is answered at once with an input_required result
// that embeds aegis's elicitation and carries aegis's requestState, a MAC
// of the question's id under a key of the session's ([Question]). The
// client asks the person and retries the call with the answer and that
// state; the relay takes both out of the retry ([Input.Answer]), so the
// server never sees them, and the retry is decided as any call: when the
// policy asks again, the answer is given to the stored question (unless
// another channel answered first) and taken for the retry's arguments and
// the policy's hash, as a held call takes it. A state aegis did not issue
// in this session, an answer for changed arguments or a changed policy,
// or an expired question answers nothing: the retry is a new question.
//
// A call that retries a server's input_required result is not asked in
// its round trips (aegis would have to carry the server's state and
// answers through its own round); it is held as in older revisions, and a
// call approved once is not asked again when it continues (Input.Continues):
// the retry and the call are one logical call.

// StatePrefix begins every requestState aegis issues; the relay looks for
// it in a retry.
const StatePrefix = "aegis-approval."

// InputKey is the key of aegis's question in an input_required result's
// inputRequests, and of its answer in the retry's inputResponses.
const InputKey = "aegis-approval"

// A Question is a call's question put to the person at the client in the
// call's round trips: the relay answers the call with an input_required
// result embedding an elicitation of Request and carrying State.
type Question struct {
	Request *approval.Request
	State   string
}

// An Answer is what a retry brings back for aegis's question: the
// requestState as the client sent it and the person's answer, read from
// the elicitation result. Answered is false when the client brought no
// answer aegis's question offered (a cancel, an unknown action or scope):
// the question stays open for the other channels.
type Answer struct {
	State    string
	Answered bool
	Approve  bool
	Scope    approval.Scope
}

// ElicitationAnswer reads an elicitation result (action and content) as an
// answer to aegis's question: accept with scope call or session approves,
// decline denies; anything else answers nothing (ok false).
func ElicitationAnswer(action, scope string) (approve bool, sc approval.Scope, ok bool) {
	switch action {
	case "accept":
		if scope == "" {
			return true, approval.ScopeCall, true
		}
		sc, err := approval.ParseScope(scope)
		if err != nil {
			return false, "", false
		}
		return true, sc, true
	case "decline":
		return false, "", true
	}
	return false, "", false
}

// stateKey is a session's key for the states it issues.
type stateKey struct {
	once sync.Once
	k    [32]byte
}

func (k *stateKey) mac(session, id string) string {
	k.once.Do(func() { rand.Read(k.k[:]) })
	m := hmac.New(sha256.New, k.k[:])
	m.Write([]byte("aegis.approval.state.v1\x00"))
	m.Write([]byte(session))
	m.Write([]byte{0})
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// state is the requestState that names question id in session.
func (k *stateKey) state(session, id string) string {
	return StatePrefix + id + "." + k.mac(session, id)
}

// open returns the question id that state names, if this key issued it in
// session.
func (k *stateKey) open(session, state string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(state, StatePrefix)
	if !ok {
		return "", false
	}
	id, mac, ok := strings.Cut(rest, ".")
	if !ok || len(id) != 16 {
		return "", false
	}
	return id, hmac.Equal([]byte(mac), []byte(k.mac(session, id)))
}

// maxContinued bounds the approved calls a session remembers for their
// continuations; the oldest is forgotten first (its continuation then
// asks again).
const maxContinued = 256

// continued remembers the calls a person approved, by method, tool and
// forwarded arguments, so that a retry that continues one (Input.Continues)
// is not asked again.
type continued struct {
	mu    sync.Mutex
	m     map[[32]byte]string // → the approval's id
	order [][32]byte
}

func continuedKey(c *Call, argsHash string) [32]byte {
	return sha256.Sum256([]byte(c.Method + "\x00" + c.Tool + "\x00" + argsHash))
}

func (cs *continued) add(c *Call, argsHash, id string) {
	k := continuedKey(c, argsHash)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = make(map[[32]byte]string)
	}
	if _, ok := cs.m[k]; ok {
		cs.m[k] = id
		return
	}
	if len(cs.order) >= maxContinued {
		delete(cs.m, cs.order[0])
		cs.order = cs.order[1:]
	}
	cs.m[k] = id
	cs.order = append(cs.order, k)
}

func (cs *continued) of(c *Call, argsHash string) (string, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	id, ok := cs.m[continuedKey(c, argsHash)]
	return id, ok
}
