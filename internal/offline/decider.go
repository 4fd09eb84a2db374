package offline

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/pin"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// Decider decides events of one run (`aegis eval`, `aegis explain`): each
// server's calls go through a gateway.Session, as under `aegis run`, with
// the tool definitions `aegis run` pinned for it when Pins finds them (read,
// never written): a held tool is refused and arguments are checked against
// the pinned schema. A server with no pins skips those two steps (an
// event's input_schema then stands for the pinned schema). The sessions
// the events name live in the engine's session store for the run: a
// session starts, with its origin, at its first event.
type Decider struct {
	eng *gateway.Engine
	// pins returns the pins of a server, nil when it has none.
	pins     func(server string) (*pin.Store, error)
	opened   map[string]bool
	sessions map[string]*gateway.Session // by server; nil for one not configured
}

// NewDecider returns a Decider over eng. pins finds a server's pins; nil
// means none are known for any server.
func NewDecider(eng *gateway.Engine, pins func(server string) (*pin.Store, error)) *Decider {
	return &Decider{eng: eng, pins: pins, opened: map[string]bool{}, sessions: map[string]*gateway.Session{}}
}

// StatePins finds the pins `aegis run` keeps in state: nil for a server
// whose pins file does not exist.
func StatePins(state config.State) func(server string) (*pin.Store, error) {
	return func(server string) (*pin.Store, error) {
		if err := config.CheckServerName(server); err != nil {
			return nil, err
		}
		path := state.PinFile(server)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return pin.Open(path)
	}
}

// Engine returns the engine d decides with.
func (d *Decider) Engine() *gateway.Engine { return d.eng }

// Session returns the pipeline of server, nil if the configuration does not
// name it.
func (d *Decider) Session(server string) (*gateway.Session, error) {
	if s, ok := d.sessions[server]; ok {
		return s, nil
	}
	var s *gateway.Session
	if d.eng.Server(server) != nil {
		var pins *pin.Store
		if d.pins != nil {
			var err error
			if pins, err = d.pins(server); err != nil {
				return nil, err
			}
		}
		var err error
		if s, err = d.eng.NewSession(&gateway.SessionConfig{Server: server, Pins: pins}); err != nil {
			return nil, err
		}
	}
	d.sessions[server] = s
	return s, nil
}

// open starts ev's session in the engine's store at its first event.
func (d *Decider) open(c *gateway.Call) {
	if c.Session != "" && !d.opened[c.Session] {
		d.opened[c.Session] = true
		d.eng.OpenSession(c.Session, c.Origin)
	}
}

// Call decides a call event. An error means the server's pins could not
// be read; a call to a server the configuration does not name is denied,
// saying so.
func (d *Decider) Call(ctx context.Context, ev *Event) (gateway.Verdict, error) {
	c := ev.Call()
	d.open(c)
	s, err := d.Session(c.Server)
	if err != nil {
		return gateway.Verdict{}, err
	}
	if s == nil {
		return d.eng.Check(ctx, c), nil
	}
	return s.Decide(ctx, c), nil
}

// Explain is Call that also lists the rules that matched, when the call
// reached the policy. pinsKnown is false when the server has no pins, so
// the pin and schema steps were skipped.
func (d *Decider) Explain(ctx context.Context, ev *Event) (v gateway.Verdict, x *policy.Explanation, pinsKnown bool, err error) {
	c := ev.Call()
	d.open(c)
	s, err := d.Session(c.Server)
	if err != nil {
		return v, nil, false, err
	}
	if s == nil {
		return d.eng.Check(ctx, c), nil, false, nil
	}
	v, x = s.Explain(ctx, c)
	return v, x, s.PinsKnown(), nil
}

// Result takes in a result event as the pipeline's result side does: the
// result to pass on (nil for the server's own), the findings, and a
// *gateway.Refusal error when it is withheld.
func (d *Decider) Result(ev *Event) (out []byte, found []dlp.Located, err error) {
	c := ev.Call()
	d.open(c)
	if len(ev.Error) > 0 && string(ev.Error) != "null" {
		return d.eng.Result(&gateway.ResultEvent{Session: ev.Session, Server: ev.Server, Method: c.Method, Tool: c.Tool, Result: ev.Error, Error: true})
	}
	return d.eng.Result(&gateway.ResultEvent{Session: ev.Session, Server: ev.Server, Method: c.Method, Tool: c.Tool, Result: ev.Result})
}
