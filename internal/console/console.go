// Package console is aegis's local web console (DESIGN.md R21): the calls
// waiting for a person, with every argument and what aegis derived, to
// approve or deny; the recent decisions of the chain; and the pinned
// tools. It is served on loopback only, to the person who started it.
//
// Who may use it: whoever holds the random token in the URL `aegis
// console` prints. It listens (on Linux) on an address of 127.0.0.0/8 of
// its own, since a browser sends a host's cookies to every port of it. The first request brings it in the query and is
// answered with a cookie (HttpOnly, SameSite=Strict, named for the port)
// and a redirect that drops it from the address bar. Every request must
// name the console's own host and port in Host (a page of another site
// that rebinds a name to 127.0.0.1 sends its own name). An answer is a
// POST that must carry the cookie, the console's CSRF token in the form,
// and an Origin of the console itself. The page runs no script and may
// not be framed; what it shows of a call (attacker-written text, often)
// is escaped by html/template.
package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
)

// A Decision is one entry of the chain, as the console shows it.
type Decision struct {
	Name      string // its seq, with its lane: "17", "17@2"
	Time      time.Time
	Decision  string
	Target    string // "fs/write_file"
	Principal string
	Reason    string
	Caps      []string
}

// A Pin is one pinned tool, as the console shows it.
type Pin struct {
	Server, Tool string
	Held         bool // its schema changed: held until a person accepts it
	Shape        string
}

// Config is what a Console shows and answers with.
type Config struct {
	Approvals *approval.Store
	// Decisions returns the last n decisions, oldest first.
	Decisions func(n int) ([]Decision, error)
	// Pins returns the pinned tools.
	Pins func() ([]Pin, error)
	// Bindings returns what each server's tools are bound to, one line a
	// tool ("fs: read_file (data-read): /path fs.read"), for review; nil
	// when the console has no configuration.
	Bindings func() ([]string, error)
	// By names who answers through the console (the user who started it).
	By string
}

// A Console is the console's HTTP handler, for one listener.
type Console struct {
	cfg    Config
	token  string
	csrf   string
	host   string // "127.0.0.1:PORT": what Host must say
	alt    string // "localhost:PORT"
	origin string // "http://127.0.0.1:PORT"
	cookie string
}

// New returns the console for a listener at addr, which must be a
// loopback address with its port, and the URL (with the token) to open.
func New(cfg Config, addr net.Addr) (*Console, string, error) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() || tcp.Port == 0 {
		return nil, "", fmt.Errorf("console: %v is not a loopback address with a port", addr)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	token := hex.EncodeToString(b[:])
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("aegis console csrf"))
	host := tcp.String()
	c := &Console{
		cfg: cfg, token: token, csrf: hex.EncodeToString(mac.Sum(nil)),
		host: host, origin: "http://" + host,
		cookie: "aegis_console_" + strconv.Itoa(tcp.Port),
	}
	if tcp.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		c.alt = "localhost:" + strconv.Itoa(tcp.Port) // localhost is 127.0.0.1
	}
	return c, c.origin + "/?token=" + token, nil
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// the form's POST with Origin: null, which the answer's check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if r.Host != c.host && (c.alt == "" || r.Host != c.alt) {
		http.Error(w, "aegis console: this console answers only at "+c.origin, http.StatusMisdirectedRequest)
		return
	}
	if q := r.URL.Query().Get("token"); q != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
		if !same(q, c.token) {
			http.Error(w, "aegis console: wrong token; open the URL `aegis console` printed", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: c.cookie, Value: c.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if ck, err := r.Cookie(c.cookie); err != nil || !same(ck.Value, c.token) {
		http.Error(w, "aegis console: not signed in; open the URL `aegis console` printed", http.StatusUnauthorized)
		return
	}
	switch {
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		c.page(w, r)
	case r.URL.Path == "/answer" && r.Method == http.MethodPost:
		c.answer(w, r)
	default:
		http.Error(w, "aegis console: not found", http.StatusNotFound)
	}
}

// same compares secrets in constant time.
func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// answer answers one approval from the page's form.
func (c *Console) answer(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != c.origin && (c.alt == "" || o != "http://"+c.alt) {
		http.Error(w, "aegis console: refused: the request does not come from the console's own page", http.StatusForbidden)
		return
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		http.Error(w, "aegis console: refused: a request from another site", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "aegis console: a malformed form", http.StatusBadRequest)
		return
	}
	if !same(r.PostForm.Get("csrf"), c.csrf) {
		http.Error(w, "aegis console: refused: the form's token is missing or wrong (reload the page)", http.StatusForbidden)
		return
	}
	a := approval.Answer{By: c.cfg.By, Channel: approval.ChannelConsole}
	switch r.PostForm.Get("verdict") {
	case "approve":
		sc, err := approval.ParseScope(r.PostForm.Get("scope"))
		if err != nil {
			http.Error(w, "aegis console: "+err.Error(), http.StatusBadRequest)
			return
		}
		a.Approve, a.Scope = true, sc
	case "deny":
	default:
		http.Error(w, "aegis console: want verdict approve or deny", http.StatusBadRequest)
		return
	}
	id := r.PostForm.Get("id")
	msg := ""
	if _, err := c.cfg.Approvals.Answer(r.Context(), id, a); err != nil {
		msg = err.Error()
		if errors.Is(err, approval.ErrExpired) || errors.Is(err, approval.ErrAnswered) {
			msg = "approval " + id + ": " + err.Error() + " (answered elsewhere, or its call went)"
		}
	}
	to := "/"
	if msg != "" {
		to += "?" + url.Values{"msg": {msg}}.Encode()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// page shows what waits, what was decided and what is pinned.
func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	data := struct {
		Msg       string
		CSRF      string
		Pending   []*approval.Approval
		Decisions []Decision
		Pins      []Pin
		Bindings  []string
		Errors    []string
		Now       time.Time
	}{Msg: r.URL.Query().Get("msg"), CSRF: c.csrf, Now: time.Now()}
	var err error
	if data.Pending, err = c.cfg.Approvals.List(ctx, false); err != nil {
		data.Errors = append(data.Errors, "approvals: "+err.Error())
	}
	if c.cfg.Decisions != nil {
		if data.Decisions, err = c.cfg.Decisions(50); err != nil {
			data.Errors = append(data.Errors, "decisions: "+err.Error())
		}
		for i, j := 0, len(data.Decisions)-1; i < j; i, j = i+1, j-1 {
			data.Decisions[i], data.Decisions[j] = data.Decisions[j], data.Decisions[i]
		}
	}
	if c.cfg.Pins != nil {
		if data.Pins, err = c.cfg.Pins(); err != nil {
			data.Errors = append(data.Errors, "pins: "+err.Error())
		}
	}
	if c.cfg.Bindings != nil {
		if data.Bindings, err = c.cfg.Bindings(); err != nil {
			data.Errors = append(data.Errors, "bindings: "+err.Error())
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(w, data); err != nil {
		// Written in part: nothing more can be said to the browser.
		return
	}
}

// readable is a call's arguments as a person reads them: indented, with
// the characters JSON escapes for HTML's sake shown as they are (the
// template escapes them for the page).
func readable(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // a number shown as it was written, not as a float64
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return b.String()
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"left": func(t, now time.Time) string { return t.Sub(now).Round(time.Second).String() },
	"when": func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"args": readable,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>aegis console</title>
<meta http-equiv="refresh" content="5">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;max-width:70em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:2em;border-bottom:1px solid #ccc}
.card{border:1px solid #c90;background:#fff8e6;padding:.8em;margin:.8em 0;border-radius:4px}
pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:.5em;margin:.3em 0}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.2em .5em;border-bottom:1px solid #eee;vertical-align:top}
.deny{color:#a00}.allow{color:#070}.ask{color:#a60}.msg{background:#fee;padding:.5em}
form{display:inline}button{margin-right:.5em}
</style></head><body>
<h1>aegis console</h1>
{{if .Msg}}<p class="msg" id="msg">{{.Msg}}</p>{{end}}
{{range .Errors}}<p class="msg">{{.}}</p>{{end}}
<h2>Waiting for a person</h2>
{{if not .Pending}}<p id="none">No call is waiting.</p>{{end}}
{{range .Pending}}<div class="card" id="approval-{{.ID}}" data-id="{{.ID}}">
<b>{{if .Method}}{{.Method}} {{.Tool}} on {{.Server}}{{else}}{{.Server}}/{{.Tool}}{{end}}</b>
— principal {{.Principal}}, session {{.Session}}, {{left .Expires $.Now}} left (approval {{.ID}})
<div>It would:</div><pre>{{range .Caps}}{{.}}
{{else}}(no resource derived)
{{end}}</pre>
<div>Asked because:</div><pre>{{.Reason}}</pre>
<div>Arguments (secrets redacted):</div><pre>{{args .Arguments}}</pre>
<form method="post" action="/answer"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="verdict" value="approve"><input type="hidden" name="scope" value="call"><button class="approve" type="submit">Approve this call</button></form>
<form method="post" action="/answer"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="verdict" value="approve"><input type="hidden" name="scope" value="session"><button class="approve-session" type="submit">Approve for the session</button></form>
<form method="post" action="/answer"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="verdict" value="deny"><button class="deny" type="submit">Deny</button></form>
</div>{{end}}
<h2>Recent decisions</h2>
<table id="decisions"><tr><th>seq</th><th>time</th><th>decision</th><th>call</th><th>principal</th><th>why</th></tr>
{{range .Decisions}}<tr><td>{{.Name}}</td><td>{{when .Time}}</td><td class="{{.Decision}}">{{.Decision}}</td><td>{{.Target}}{{range .Caps}}<br><small>{{.}}</small>{{end}}</td><td>{{.Principal}}</td><td>{{.Reason}}</td></tr>{{end}}
</table>
<h2>Pinned tools</h2>
<table id="pins"><tr><th>server</th><th>tool</th><th>state</th><th>shape</th></tr>
{{range .Pins}}<tr><td>{{.Server}}</td><td>{{.Tool}}</td><td>{{if .Held}}<b class="deny">held: its schema changed (aegis pins accept {{.Tool}})</b>{{else}}pinned{{end}}</td><td><code>{{printf "%.12s" .Shape}}</code></td></tr>{{end}}
</table>
<h2>Bindings</h2>
{{if not .Bindings}}<p>No configuration given (aegis console --config FILE shows what each tool's arguments are taken to be).</p>{{end}}
<pre id="bindings">{{range .Bindings}}{{.}}
{{end}}</pre>
</body></html>
`))
