package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/args"
)

// JSON-RPC error codes the relay answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// codeServerGone is in JSON-RPC's range for implementation-defined
	// server errors: the wrapped server exited before answering.
	codeServerGone = -32000
	// codeRefused answers a request of a method other than tools/call that
	// aegis refused, or whose result it withheld.
	codeRefused = -32001
)

// Reasons shown to the client when a check failed rather than decided.
const (
	reasonUnchecked      = "aegis refused this call: it could not be checked"
	reasonRefused        = "aegis refused this call"
	reasonResultWithheld = "aegis withheld this tool's result: it could not be checked"
)

// errorResponse returns a JSON-RPC error response to id (raw JSON), with its
// newline.
func errorResponse(id []byte, code int, msg string) []byte {
	b := make([]byte, 0, 64+len(id)+len(msg))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	return append(b, "}}\n"...)
}

// toolError returns a tools/call result to req that reports text as a tool
// error (isError), with its newline: the model reads it and can adjust.
// For a call of protocol revision 2026-07-28 or later, which requires every
// result to say its resultType, it says "complete". A request of another
// method has no such result: it gets a JSON-RPC error with text.
func toolError(req *request, text string) []byte {
	if req.call != nil && req.call.Method != "" {
		return errorResponse(req.id, codeRefused, text)
	}
	b := make([]byte, 0, 128+len(req.id)+len(text))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, req.id...)
	b = append(b, `,"result":{`...)
	if req.call != nil && typedResults(req.call.Meta) {
		b = append(b, `"resultType":"complete",`...)
	}
	b = append(b, `"content":[{"type":"text","text":`...)
	b = appendString(b, text)
	return append(b, `}],"isError":true}}`+"\n"...)
}

// metaProtocolVersion is the _meta key by which a request of revision
// 2026-07-28 or later names its revision (there is no initialize then).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// typedResults reports whether a request whose params._meta is meta (raw
// JSON the relay validated; nil when absent) names protocol revision
// 2026-07-28 or later, whose results carry a resultType. Revisions are
// dates, YYYY-MM-DD, which compare as strings.
func typedResults(meta []byte) bool {
	if len(meta) == 0 || meta[0] != '{' {
		return false
	}
	var buf [8]args.Member
	for _, m := range args.Members(buf[:0], meta, 0) {
		if string(m.Key) != metaProtocolVersion {
			continue
		}
		v := meta[m.Start:m.End]
		if len(v) < 2 || v[0] != '"' {
			return false
		}
		rev := string(args.Unquote(v))
		return isRevision(rev) && rev >= "2026-07-28"
	}
	return false
}

// isRevision reports whether s has the shape of a protocol revision,
// YYYY-MM-DD.
func isRevision(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i, c := range []byte(s) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // never fails for a string; invalid UTF-8 becomes U+FFFD
	return append(b, q...)
}

// splice returns a copy of msg with the bytes of s replaced by repl.
func splice(msg []byte, s span, repl ...[]byte) []byte {
	n := len(msg) - (s[1] - s[0])
	for _, r := range repl {
		n += len(r)
	}
	out := make([]byte, 0, n)
	out = append(out, msg[:s[0]]...)
	for _, r := range repl {
		out = append(out, r...)
	}
	return append(out, msg[s[1]:]...)
}

// object checks that b, supplied by a gate, is a strict JSON object, and
// returns it on one line.
func object(b []byte, maxDepth int) ([]byte, error) {
	first, err := args.Validate(b, maxDepth)
	if err != nil {
		return nil, syntaxError(err)
	}
	if first != '{' {
		return nil, errors.New("not a JSON object")
	}
	if bytes.ContainsAny(b, "\r\n") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return bytes.TrimSpace(b), nil
}
