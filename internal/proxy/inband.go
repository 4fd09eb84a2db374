package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/gateway"
)

// This file puts aegis's own questions to a client of MCP 2026-07-28 in
// the call's round trips (see gateway/inband.go): there, a server (and so
// aegis, in its place) cannot send the client a request; it answers the
// call with an input_required result, and the client retries.
//
// A tools/call, prompts/get or resources/read whose _meta names revision
// 2026-07-28 or later and declares the elicitation capability is marked
// [Call.InBand]; a call held for a person's approval is then answered at
// once with
//
//	{"resultType":"input_required","inputRequests":{"aegis-approval":{"method":"elicitation/create","params":…}},"requestState":"aegis-approval.…"}
//
// and the client's retry brings the answer under the same key, with the
// state. The relay takes both out of the retry before anything else reads
// it ([Call.Answer]): the gate decides the retry as the call the client
// would have sent without aegis's round, and the server never sees aegis's
// round. Only a requestState that begins with [gateway.StatePrefix] is
// taken; whether aegis issued it is the gate's to check (it is a MAC).

// inBandMethods are the methods whose result may be input_required.
var inBandMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

const (
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// answersInBand reports whether a request whose params._meta is meta can
// be asked in its round trips: it names revision 2026-07-28 or later and
// its client capabilities declare elicitation (an object).
func answersInBand(meta []byte) bool {
	if !typedResults(meta) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return false
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(m[metaClientCapabilities], &caps) != nil {
		return false
	}
	el := bytes.TrimSpace(caps["elicitation"])
	return len(el) > 0 && el[0] == '{'
}

// takeAnswer takes aegis's round out of a retry: when the request line
// (m, parsed from it) has a requestState that begins with aegis's prefix,
// it returns the line without it and without aegis's key in
// inputResponses (without inputResponses when nothing else is left), and
// what the client answered. Otherwise it returns line and nil.
func takeAnswer(line []byte, m message) ([]byte, *gateway.Answer) {
	if !m.params.ok() || line[m.params[0]] != '{' {
		return line, nil
	}
	// A state of aegis's holds the prefix as written, or escaped: with a
	// \u escape (the prefix has nothing else to escape).
	if !bytes.Contains(line, []byte(gateway.InputKey)) && !bytes.Contains(line, []byte(`\u`)) {
		return line, nil
	}
	var buf [8]args.Member
	ms := args.Members(buf[:0], line, m.params[0])
	rs := find(ms, "requestState")
	if !rs.ok() || line[rs[0]] != '"' {
		return line, nil
	}
	state := string(args.Unquote(rs.of(line)))
	if len(state) < len(gateway.StatePrefix) || state[:len(gateway.StatePrefix)] != gateway.StatePrefix {
		return line, nil
	}
	ans := &gateway.Answer{State: state}
	var rest []byte // inputResponses without aegis's key, when anything is left
	if ir := find(ms, "inputResponses"); ir.ok() && line[ir[0]] == '{' {
		var ibuf [8]args.Member
		for _, im := range args.Members(ibuf[:0], line, ir[0]) {
			v := line[im.Start:im.End]
			if string(im.Key) == gateway.InputKey {
				var res struct {
					Action  string `json:"action"`
					Content struct {
						Scope string `json:"scope"`
					} `json:"content"`
				}
				if json.Unmarshal(v, &res) == nil {
					ans.Approve, ans.Scope, ans.Answered = gateway.ElicitationAnswer(res.Action, res.Content.Scope)
				}
				continue
			}
			if rest == nil {
				rest = append(rest, '{')
			} else {
				rest = append(rest, ',')
			}
			rest = appendString(rest, string(im.Key))
			rest = append(append(rest, ':'), v...)
		}
		if rest != nil {
			rest = append(rest, '}')
		}
	}
	params := make([]byte, 0, m.params[1]-m.params[0])
	params = append(params, '{')
	for _, pm := range ms {
		v := line[pm.Start:pm.End]
		switch string(pm.Key) {
		case "requestState":
			continue
		case "inputResponses":
			if rest == nil {
				continue
			}
			v = rest
		}
		if len(params) > 1 {
			params = append(params, ',')
		}
		params = appendString(params, string(pm.Key))
		params = append(append(params, ':'), v...)
	}
	params = append(params, '}')
	out := make([]byte, 0, len(line)-(m.params[1]-m.params[0])+len(params))
	out = append(out, line[:m.params[0]]...)
	out = append(out, params...)
	out = append(out, line[m.params[1]:]...)
	return out, ans
}

// inputRequiredResponse is the relay's answer to req, whose question q is
// put to the person at the client in the call's round trips.
func inputRequiredResponse(req *request, q *gateway.Question) ([]byte, error) {
	params, err := elicitParams(q.Request, "form")
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 256+len(req.id)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, req.id...)
	b = append(b, `,"result":{"resultType":"input_required","inputRequests":{`...)
	b = appendString(b, gateway.InputKey)
	b = append(b, `:{"method":"elicitation/create","params":`...)
	b = append(b, params...)
	b = append(b, `}},"requestState":`...)
	b = appendString(b, q.State)
	return append(b, "}}\n"...), nil
}
