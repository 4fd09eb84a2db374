package dlp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseActions(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    Actions
		wantErr []string // substrings of the error
	}{
		{name: "empty", in: nil, want: Actions{ByKind: map[Kind]Action{}}},
		{
			name: "default and kinds",
			in:   map[string]string{"default": "redact", "private_key": "deny", "card": "ask", "jwt": "report"},
			want: Actions{Default: ActionRedact, ByKind: map[Kind]Action{PrivateKey: ActionDeny, Card: ActionAsk, JWT: ActionReport}},
		},
		{
			name:    "unknown kinds are all named",
			in:      map[string]string{"gihub.token": "deny", "aws": "deny", "card": "ask"},
			wantErr: []string{`unknown finding kind "aws", "gihub.token"`, "known: default, anthropic.key, aws.access_key"},
		},
		{
			name:    "unknown action names the kind",
			in:      map[string]string{"card": "block", "default": "allow"},
			wantErr: []string{`card: unknown action "block"`, `default: unknown action "allow"`, "want deny, ask, redact or report"},
		},
		{name: "case matters", in: map[string]string{"card": "Deny"}, wantErr: []string{`card: unknown action "Deny"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseActions(tc.in)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseActions(%v) = %v, want an error", tc.in, got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseActions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	acts := Actions{Default: ActionRedact, ByKind: map[Kind]Action{PrivateKey: ActionDeny, Card: ActionAsk, JWT: ActionReport}}
	tests := []struct {
		name  string
		acts  *Actions
		kinds []Kind
		want  Action
		found bool
	}{
		{name: "nothing found", acts: &acts, want: ActionReport},
		{name: "default", acts: &acts, kinds: []Kind{GitHubToken}, want: ActionRedact, found: true},
		{name: "report alone", acts: &acts, kinds: []Kind{JWT}, want: ActionReport, found: true},
		{name: "strictest wins", acts: &acts, kinds: []Kind{JWT, GitHubToken, Card}, want: ActionAsk, found: true},
		{name: "deny beats all", acts: &acts, kinds: []Kind{Card, PrivateKey, JWT}, want: ActionDeny, found: true},
		{name: "nil denies", acts: nil, kinds: []Kind{JWT}, want: ActionDeny, found: true},
		{name: "zero denies", acts: &Actions{}, kinds: []Kind{JWT}, want: ActionDeny, found: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fs []Finding
			var ls []Located
			for _, k := range tc.kinds {
				fs = append(fs, Finding{Kind: k})
				ls = append(ls, Located{Kind: k, Pointer: "/x"})
			}
			if got, found := tc.acts.Decide(fs); got != tc.want || found != tc.found {
				t.Errorf("Decide = %v, %v; want %v, %v", got, found, tc.want, tc.found)
			}
			if got, found := tc.acts.DecideLocated(ls); got != tc.want || found != tc.found {
				t.Errorf("DecideLocated = %v, %v; want %v, %v", got, found, tc.want, tc.found)
			}
		})
	}
}

func TestActionNames(t *testing.T) {
	for _, a := range []Action{ActionDeny, ActionAsk, ActionRedact, ActionReport} {
		got, err := ParseAction(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAction(%q) = %v, %v", a.String(), got, err)
		}
	}
	if s := Action(9).String(); s != "Action(9)" {
		t.Errorf("Action(9).String() = %q", s)
	}
}

func TestKinds(t *testing.T) {
	ks := Kinds()
	if len(ks) != 25 {
		t.Errorf("Kinds() has %d kinds; a kind was added or dropped without updating this test and the docs", len(ks))
	}
	for _, k := range ks {
		if !k.Known() {
			t.Errorf("%s not Known", k)
		}
		if strings.ToLower(string(k)) != string(k) || strings.ContainsAny(string(k), " ,:") {
			t.Errorf("kind %q is not a lower-case config key", k)
		}
	}
	if Kind("default").Known() || Kind("github").Known() {
		t.Error("Known accepts a name that is not a kind")
	}
	ks[0] = "changed"
	if Kinds()[0] == "changed" {
		t.Error("Kinds returns the package's own slice")
	}
}
