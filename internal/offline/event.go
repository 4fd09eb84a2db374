package offline

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// Event is one line of `aegis eval` input (or `aegis explain`'s one call): a
// call when it has "arguments", a tool result when it has "result".
type Event struct {
	Session   string   `json:"session"`
	Principal string   `json:"principal"`
	Roles     []string `json:"roles"`
	Origin    string   `json:"origin"`
	Taint     bool     `json:"taint"`
	Turn      int      `json:"turn"`
	Server    string   `json:"server"`
	// Method is the MCP request of a request of another method than
	// tools/call (resources/read, prompts/get, sampling/createMessage,
	// ...), with its Params; a tools/call has Tool and Arguments.
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	// Error is the JSON-RPC error object a server answered with instead
	// of a result: it passes the result side as a result does.
	Error json.RawMessage `json:"error"`
	// InputSchema is the tool's input schema as its server would list it:
	// with one, the call's arguments are checked against it, closed, as
	// `aegis run` checks them against the schema it pinned.
	InputSchema json.RawMessage `json:"input_schema"`
}

// ParseEvent decodes one event strictly: the line must be strict JSON (no
// duplicate keys, valid UTF-8), and unknown fields are errors.
func ParseEvent(line []byte) (*Event, error) {
	if t := bytes.TrimLeft(line, " \t\r"); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("an event must be a JSON object")
	}
	var doc args.Doc
	if err := doc.Decode(line, nil); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var ev Event
	if err := dec.Decode(&ev); err != nil {
		return nil, err
	}
	if ev.Method == policy.ToolsCall {
		ev.Method = ""
	}
	if present(ev.Result) && present(ev.Error) {
		return nil, errors.New(`an event has "result" or "error", not both`)
	}
	if present(ev.Error) && bytes.TrimLeft(ev.Error, " \t\r\n")[0] != '{' {
		return nil, errors.New(`"error" must be a JSON-RPC error object`)
	}
	if ev.Method != "" {
		if err := ev.checkRequest(); err != nil {
			return nil, err
		}
		return &ev, nil
	}
	hasArgs, hasResult := present(ev.Arguments), ev.IsResult()
	switch {
	case present(ev.Params):
		return nil, errors.New(`"params" belongs to an event with a "method"; a tools/call has "tool" and "arguments"`)
	case hasArgs && hasResult:
		return nil, errors.New(`an event has "arguments" (a call) or "result" (a result), not both`)
	case !hasArgs && !hasResult:
		return nil, errors.New(`an event needs "arguments" (a call) or "result" (a result)`)
	case ev.Server == "":
		return nil, errors.New(`missing "server"`)
	case ev.Tool == "":
		return nil, errors.New(`missing "tool"`)
	}
	if _, err := parseOrigin(ev.Origin); err != nil {
		return nil, err
	}
	if present(ev.InputSchema) && bytes.TrimLeft(ev.InputSchema, " \t\r\n")[0] != '{' {
		return nil, errors.New(`"input_schema" must be a JSON object`)
	}
	return &ev, nil
}

// checkRequest checks an event of a request of another method.
func (ev *Event) checkRequest() error {
	switch {
	case ev.Tool != "" || present(ev.Arguments):
		return fmt.Errorf(`an event of method %q has "params", not "tool" or "arguments"`, ev.Method)
	case present(ev.InputSchema):
		return errors.New(`"input_schema" is a tool's`)
	case ev.Server == "":
		return errors.New(`missing "server"`)
	case present(ev.Params) && bytes.TrimLeft(ev.Params, " \t\r\n")[0] != '{' && bytes.TrimLeft(ev.Params, " \t\r\n")[0] != '[':
		return errors.New(`"params" must be a JSON object or array`)
	}
	_, err := parseOrigin(ev.Origin)
	return err
}

func present(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

func parseOrigin(s string) (capability.Origin, error) {
	switch s {
	case "", "interactive":
		return capability.Interactive, nil
	case "unattended":
		return capability.Unattended, nil
	}
	return 0, fmt.Errorf("origin %q: want interactive or unattended", s)
}

// IsResult reports whether ev is a result (or a JSON-RPC error answer)
// rather than a call.
func (ev *Event) IsResult() bool { return present(ev.Result) || present(ev.Error) }

// Call returns the gateway call of a call event. An unattended session is
// tainted from its start (DESIGN.md R19).
func (ev *Event) Call() *gateway.Call {
	origin, _ := parseOrigin(ev.Origin)
	c := &gateway.Call{
		Session:   ev.Session,
		Principal: ev.Principal,
		Roles:     ev.Roles,
		Origin:    origin,
		Taint:     ev.Taint || origin == capability.Unattended,
		Turn:      ev.Turn,
		Server:    ev.Server,
		Tool:      ev.Tool,
		Arguments: ev.Arguments,
	}
	if ev.Method != "" {
		m, _ := gateway.DecidedMethod(ev.Method)
		var params []byte
		if present(ev.Params) {
			params = ev.Params
		}
		gateway.RequestOf(c, ev.Method, params, m.FromServer)
		return c
	}
	if present(ev.InputSchema) {
		c.Schema = ev.InputSchema
		c.SchemaKey = sha256.Sum256(ev.InputSchema)
	}
	return c
}

// MaxLine caps one line of events; a longer line is an error, and the
// reading goes on.
const MaxLine = 8 << 20

// ErrLineTooLong is ReadLine's error for a line over MaxLine.
var ErrLineTooLong = errors.New("line too long")

// ReadLine returns the next line of events without its newline. A line
// over MaxLine is consumed whole and reported as ErrLineTooLong, so the
// next line is read correctly.
func ReadLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, ErrLineTooLong
		}
		line = append(line, chunk...)
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
		default:
			return line, err
		}
	}
}
